//go:build !unix

package keychain

import "os"

// checkPrivate refuses symlinks and wrong file types. Mode bits mean little
// here (Windows uses ACLs), so only the type is checked.
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
	return nil
}
