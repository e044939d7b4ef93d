//go:build !unix && !windows

package keychain

import (
	"errors"
	"os"
)

func openLockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

func flock(*os.File, bool) error { return errors.New("file locking is not supported on this platform") }

func funlock(*os.File) error { return nil }
