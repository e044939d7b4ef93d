//go:build unix

package skills

import (
	"os"
	"syscall"
)

// openNoFollow opens a file for reading, failing if the last path element
// is a symlink (it may have been swapped in after the walk saw a file).
func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0) //nolint:gosec // G304: walking the skill tree is the point
}
