//go:build unix

package facade

import (
	"syscall"
	"time"
)

// cpuTime is this process's user+system CPU time; the benchmarks run client,
// facade and sidecar in one process, so it covers the whole path.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
