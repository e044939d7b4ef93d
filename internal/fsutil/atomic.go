// Package fsutil holds small file-system helpers shared by warden's
// packages.
package fsutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data: it writes a new temporary file
// beside path (mode perm from the start, so the data is never readable by
// more than perm allows), syncs it, renames it over path and syncs the
// directory. A reader sees the old content or the new, never a part; on
// any error path is untouched and the temporary file is removed.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	err = tmp.Chmod(perm)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil { //nolint:gosec // G304: the file's own directory
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
