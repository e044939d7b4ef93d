package sidecar

import (
	"errors"
	"fmt"
)

var (
	// ErrHealthTimeout: the sidecar did not answer 2xx on its health path
	// within Spec.HealthTimeout.
	ErrHealthTimeout = errors.New("sidecar: health check timed out")
	// ErrExited: the process exited before it became healthy.
	ErrExited = errors.New("sidecar: exited before becoming healthy")
	// ErrClosed: the supervisor is closed.
	ErrClosed = errors.New("sidecar: supervisor closed")
)

// StartError reports a sidecar that failed its first start. It is left in
// StateBroken and not restarted.
type StartError struct {
	Name string
	Err  error
}

func (e *StartError) Error() string { return fmt.Sprintf("sidecar: start %s: %v", e.Name, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }
