//go:build !linux

package bwrap

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/wardenhq/warden/internal/sandbox"
)

// Runner is only available on Linux.
type Runner struct {
	Bwrap  string
	Logger *slog.Logger
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// FindBwrap fails: bubblewrap is Linux-only.
func FindBwrap() (string, error) {
	return "", errors.New("bwrap: bubblewrap is only available on Linux")
}

// Run fails: bubblewrap is Linux-only.
func (rn *Runner) Run(context.Context, *sandbox.Spec) (int, error) {
	return 125, &sandbox.StartError{Err: errors.New("bwrap: bubblewrap is only available on Linux")}
}
