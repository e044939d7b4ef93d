//go:build !darwin

package seatbelt

import (
	"context"
	"errors"

	"github.com/wardenhq/warden/internal/sandbox"
)

// Run fails: Seatbelt exists only on macOS.
func (rn *Runner) Run(context.Context, *sandbox.Spec) (int, error) {
	return 125, &sandbox.StartError{Err: errors.New("seatbelt: sandbox-exec is only available on macOS")}
}
