package keychain

import (
	"fmt"
	"os"
)

// lock takes a flock on path+".lock", shared or exclusive. The lock file
// holds no data and is never removed, so every process locks the same inode.
func (f *File) lock(exclusive bool) (unlock func(), err error) {
	lp := f.path + ".lock"
	fh, err := openLockFile(lp)
	if err != nil {
		return nil, fmt.Errorf("keychain: open lock file: %w", err)
	}
	if err := checkPrivate(lp, false); err != nil {
		fh.Close()
		return nil, err
	}
	if err := flock(fh, exclusive); err != nil {
		fh.Close()
		return nil, fmt.Errorf("keychain: lock %s: %w", lp, err)
	}
	return func() {
		_ = funlock(fh)
		fh.Close()
	}, nil
}

// syncDir makes a rename durable; errors are ignored because some systems
// cannot sync directories.
func syncDir(dir string) {
	d, err := os.Open(dir) //nolint:gosec // G304: the keyring directory, opened to fsync it
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
