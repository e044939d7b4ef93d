//go:build !unix

package sidecar

import (
	"os"
	"syscall"
)

var (
	sigTERM = os.Kill
	sigKILL = os.Kill
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// Without process groups only the leader is signalled (by the reaper).
func signalGroup(int, os.Signal) {}

func groupAlive(_ int, exited <-chan struct{}) bool {
	select {
	case <-exited:
		return false
	default:
		return true
	}
}
