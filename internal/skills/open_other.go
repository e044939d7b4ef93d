//go:build !unix

package skills

import (
	"fmt"
	"os"
)

// openNoFollow opens a file for reading after checking that it is not a
// symlink. Without O_NOFOLLOW a swap between the check and the open is
// caught afterwards by the regular-file check on the open handle.
func openNoFollow(p string) (*os.File, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symlink", p)
	}
	return os.Open(p)
}
