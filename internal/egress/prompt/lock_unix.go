//go:build unix

package prompt

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on p (created 0600 if missing) and
// returns its release. The lock lives in its own file because the data
// file is replaced by rename on every write.
func lockFile(p string) (func(), error) {
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600) //nolint:gosec // G304: the lock file beside the user's config file
	if err != nil {
		return nil, fmt.Errorf("prompt: open lock: %w", err)
	}
	for {
		err = unix.Flock(int(fh.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("prompt: lock %s: %w", p, err)
	}
	return func() {
		_ = unix.Flock(int(fh.Fd()), unix.LOCK_UN)
		fh.Close()
	}, nil
}
