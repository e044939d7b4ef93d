package keychain

import (
	"errors"
	"fmt"
)

var (
	// ErrWrongPassphrase means the passphrase or key file does not match the
	// one the keyring file was created with.
	ErrWrongPassphrase = errors.New("keychain: wrong passphrase or key for the keyring file")
	// ErrTampered means the keyring file failed authentication: it was
	// modified, truncated or corrupted.
	ErrTampered = errors.New("keychain: keyring file failed integrity check (modified or corrupt)")
	// ErrNoPassphrase means the file backend has no key source.
	ErrNoPassphrase = errors.New("keychain: the encrypted-file keyring needs a passphrase (set " + EnvPassphrase + ") or a key file")
	// ErrTooLarge means the backend refused a value as too large.
	ErrTooLarge = errors.New("keychain: secret too large for the backend")
	// ErrReservedName means an account or service name is reserved or empty.
	ErrReservedName = errors.New("keychain: invalid or reserved name")
)

// PermError reports a key, keyring or directory whose ownership or mode lets
// other users read or replace it.
type PermError struct {
	Path   string
	Reason string
}

func (e *PermError) Error() string {
	return fmt.Sprintf("keychain: refusing insecure %s: %s", e.Path, e.Reason)
}
