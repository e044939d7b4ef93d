//go:build !unix

package skills

import (
	"fmt"
	"os"
)

// lockFile opens p and returns a release. Without flock, concurrent
// writers are not excluded on this platform; the file is still replaced
// atomically.
func lockFile(p string, _ bool) (func(), error) {
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("skills: open lock: %w", err)
	}
	return func() { fh.Close() }, nil
}

func checkStateDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("skills: state dir %s is not a directory", d)
	}
	return nil
}
