package facade

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// ListenUnix listens on dir/name, a Unix socket with mode 0600 inside dir,
// which must be (or is created as) a directory of mode 0700 owned by us; a
// symlink, a foreign owner or group/other permissions are errors. A stale
// socket at the path is replaced; any other file there is an error.
func ListenUnix(dir, name string) (net.Listener, error) {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return nil, fmt.Errorf("facade: invalid socket name %q", name)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("facade: runtime dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("facade: runtime dir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("facade: runtime dir %s is not a directory", dir)
	}
	if fi.Mode().Perm() != 0o700 {
		return nil, fmt.Errorf("facade: runtime dir %s has mode %#o, want 0700", dir, fi.Mode().Perm())
	}
	if err := checkOwner(fi); err != nil {
		return nil, fmt.Errorf("facade: runtime dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("facade: %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("facade: remove stale socket: %w", err)
		}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("facade: listen: %w", err)
	}
	// The dir is 0700, so nobody else can reach the socket between bind
	// and chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("facade: chmod socket: %w", err)
	}
	return l, nil
}
