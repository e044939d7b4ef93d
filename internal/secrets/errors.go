package secrets

import "errors"

var (
	// ErrNotFound means no secret is stored under the service and account.
	ErrNotFound = errors.New("secrets: not found")
	// ErrUnavailable means the backend could not be reached, timed out or is
	// locked. It is never treated as "not found".
	ErrUnavailable = errors.New("secrets: keychain unavailable")
)
