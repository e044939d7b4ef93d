//go:build !linux

package hostrun

import (
	"context"
	"errors"
	"io"

	"github.com/wardenhq/warden/internal/sandbox"
)

// Runner is Linux-only.
type Runner struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run fails outside Linux.
func (rn *Runner) Run(context.Context, *sandbox.Spec) (int, error) {
	return 125, &sandbox.StartError{Err: errors.New("hostrun: the landlock and none backends are Linux-only")}
}
