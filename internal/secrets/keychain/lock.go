package keychain

import (
	"fmt"
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
