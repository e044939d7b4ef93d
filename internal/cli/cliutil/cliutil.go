// Package cliutil holds what every warden command shares: I/O streams,
// error types and the one exit-code map (docs/exit-codes.md).
package cliutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// Exit codes (docs/exit-codes.md).
const (
	ExitOK            = 0
	ExitFailure       = 1
	ExitUsage         = 2
	ExitConfigInvalid = 3
	ExitPrerequisite  = 4
	ExitIO            = 5
	ExitSandboxFailed = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
	ExitInterrupted   = 130
)

// IOStreams are a command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// System returns the process's streams.
func System() *IOStreams { return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr} }

// IsTerminal reports whether w is a terminal.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// FlagError is a usage error; usage is printed with it.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf makes a FlagError.
func FlagErrorf(format string, a ...any) error { return &FlagError{Err: fmt.Errorf(format, a...)} }

// ExitError carries an exit code without a message of its own (the child's
// status passing through, or a message already printed).
type ExitError struct {
	Code int
	Err  error // optional, printed when non-nil
}

func (e *ExitError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}
func (e *ExitError) Unwrap() error { return e.Err }

// CodeError pairs an error with the exit code it maps to.
type CodeError struct {
	Code int
	Err  error
	Hint string
}

func (e *CodeError) Error() string { return e.Err.Error() }
func (e *CodeError) Unwrap() error { return e.Err }

// WithCode wraps err with an exit code.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &CodeError{Code: code, Err: err}
}

// Code maps an error to its exit code.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	if e, ok := errors.AsType[*ExitError](err); ok {
		return e.Code
	}
	if e, ok := errors.AsType[*CodeError](err); ok {
		return e.Code
	}
	if _, ok := errors.AsType[*FlagError](err); ok {
		return ExitUsage
	}
	return ExitFailure
}

// PrintJSON writes v as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
