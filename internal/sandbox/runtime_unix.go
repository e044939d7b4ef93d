//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// RuntimeDir makes a fresh 0700 per-session directory under
// $XDG_RUNTIME_DIR/warden or the system temp dir's warden-<uid>.
func RuntimeDir() (string, error) {
	base := ""
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		base = filepath.Join(x, "warden")
	} else {
		base = filepath.Join(os.TempDir(), "warden-"+strconv.Itoa(os.Getuid()))
	}
	// XDG_RUNTIME_DIR is the user's own; the checks below refuse a base
	// that is not a 0700 directory owned by us.
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) { //nolint:gosec // G703: see above
		return "", fmt.Errorf("sandbox: runtime dir: %w", err)
	}
	fi, err := os.Lstat(base) //nolint:gosec // G703: Lstat, so a symlink planted there is refused below
	if err != nil {
		return "", fmt.Errorf("sandbox: runtime dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("sandbox: runtime dir %s must be a directory owned by uid %d with mode 0700", base, os.Getuid())
	}
	d, err := os.MkdirTemp(base, "s-")
	if err != nil {
		return "", fmt.Errorf("sandbox: runtime dir: %w", err)
	}
	return d, nil
}
