//go:build unix

package keychain

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses a path that is a symlink, of the wrong type or not
// owned by this user; a file that group or others may read or write; or a
// directory that group or others may write (and so rename files in). New
// directories are made 0700, but an existing 0755 one is accepted: the
// files in it are 0600. A missing path is returned as is (fs.ErrNotExist).
func checkPrivate(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return &PermError{Path: path, Reason: "it is a symlink"}
	case dir && !fi.IsDir():
		return &PermError{Path: path, Reason: "not a directory"}
	case !dir && !fi.Mode().IsRegular():
		return &PermError{Path: path, Reason: "not a regular file"}
	}
	mask, want := os.FileMode(0o077), "0600"
	if dir {
		mask, want = 0o022, "0700"
	}
	if perm := fi.Mode().Perm(); perm&mask != 0 {
		return &PermError{Path: path, Reason: fmt.Sprintf("mode %04o gives access to other users (want %s)", perm, want)}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &PermError{Path: path, Reason: fmt.Sprintf("owned by uid %d, not %d", st.Uid, os.Geteuid())}
	}
	return nil
}
