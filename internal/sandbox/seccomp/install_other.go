//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// NativeArch reports the Arch of the running process. seccomp exists only
// on Linux, so elsewhere it always fails with [errors.ErrUnsupported].
func NativeArch() (Arch, error) {
	return 0, fmt.Errorf("seccomp: %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Install fails with [errors.ErrUnsupported]: seccomp exists only on Linux.
func Install(Program) error {
	return fmt.Errorf("seccomp: install on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
