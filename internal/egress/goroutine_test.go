package egress

import "runtime"

func runtimeGoroutines() int { return runtime.NumGoroutine() }

func goroutineDump() string {
	b := make([]byte, 1<<20)
	return string(b[:runtime.Stack(b, true)])
}
