//go:build !linux

package child

import (
	"fmt"
	"os"
	"runtime"
)

// Init is only meaningful on Linux.
func Init() int {
	fmt.Fprintf(os.Stderr, "warden: sandbox child is not supported on %s\n", runtime.GOOS)
	return 125
}

// Exec is only meaningful on Linux.
func Exec() int { return Init() }
