package sandbox

import (
	"io"
	"os"
)

// StartError means the sandbox could not be set up: the target never ran
// (exit status 125 by convention). Every runner returns it.
type StartError struct{ Err error }

func (e *StartError) Error() string { return "sandbox failed to start: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Stdin returns r, or os.Stdin when r is nil.
func Stdin(r io.Reader) io.Reader {
	if r == nil {
		return os.Stdin
	}
	return r
}

// Stdout returns w, or os.Stdout when w is nil.
func Stdout(w io.Writer) io.Writer {
	if w == nil {
		return os.Stdout
	}
	return w
}

// Stderr returns w, or os.Stderr when w is nil.
func Stderr(w io.Writer) io.Writer {
	if w == nil {
		return os.Stderr
	}
	return w
}
