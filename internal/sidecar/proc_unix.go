//go:build unix

package sidecar

import (
	"errors"
	"syscall"
)

const (
	sigTERM = syscall.SIGTERM
	sigKILL = syscall.SIGKILL
)

// sysProcAttr puts each sidecar in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}

// groupAlive reports whether any process is left in the group. Until the
// leader is reaped the group id cannot be reused, and after that it stays
// reserved for as long as any member lives, so the probe cannot hit a
// stranger's group.
func groupAlive(pgid int, exited <-chan struct{}) bool {
	select {
	case <-exited:
	default:
		return true
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
