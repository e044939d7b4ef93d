//go:build !unix

package prompt

import (
	"fmt"
	"os"
)

// lockFile opens p and returns a release. Without flock, concurrent
// sessions are not excluded on this platform; the file is still replaced
// atomically.
func lockFile(p string) (func(), error) {
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("prompt: open lock: %w", err)
	}
	return func() { fh.Close() }, nil
}
