//go:build unix

package skills

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockFile takes a flock on p (created 0600 if missing) and returns its
// release.
func lockFile(p string, exclusive bool) (func(), error) {
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600) //nolint:gosec // G304: the lock file in the state dir
	if err != nil {
		return nil, fmt.Errorf("skills: open lock: %w", err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(int(fh.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("skills: lock %s: %w", p, err)
	}
	return func() {
		_ = unix.Flock(int(fh.Fd()), unix.LOCK_UN)
		fh.Close()
	}, nil
}

// checkStateDir refuses a state directory that is a symlink, not ours, or
// writable by group or others.
func checkStateDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("skills: state dir %s is not a directory", d)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("skills: state dir %s is writable by other users (mode %04o)", d, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("skills: state dir %s is owned by uid %d, not %d", d, st.Uid, os.Geteuid())
	}
	return nil
}
