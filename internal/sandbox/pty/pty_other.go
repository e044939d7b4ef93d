//go:build !linux

package pty

import (
	"errors"
	"io"
	"os"
)

// IsTerminal reports false: warden hands a pty through on Linux only.
func IsTerminal(*os.File) bool { return false }

// Session is unavailable here.
type Session struct{ Follower *os.File }

// Open is unavailable here.
func Open(*os.File, io.Writer) (*Session, error) {
	return nil, errors.New("pty: not supported on this system")
}

// Close does nothing.
func (*Session) Close() error { return nil }

// Prompt is unavailable here.
func (*Session) Prompt() (io.ReadWriteCloser, error) {
	return nil, errors.New("pty: not supported on this system")
}
