//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NativeArch reports the Arch of the running process.
func NativeArch() (Arch, error) {
	a, ok := archFromGOARCH(runtime.GOARCH)
	if !ok {
		return 0, fmt.Errorf("seccomp: GOARCH %s: %w", runtime.GOARCH, errors.ErrUnsupported)
	}
	return a, nil
}

// Install sets no_new_privs and installs p on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC). Neither can be undone: call it only in the
// re-exec'd sandbox child, right before it execs the target. p must be
// compiled for [NativeArch]; any other program would kill the process on
// its next syscall, so Install refuses it before changing anything. If the
// seccomp call itself fails, no_new_privs may already be set on the calling
// thread: the child should report the error and exit.
func Install(p Program) error {
	native, err := NativeArch()
	if err != nil {
		return err
	}
	if p.arch != native {
		return fmt.Errorf("seccomp: program compiled for %v, process is %v", p.arch, native)
	}
	if len(p.insns) == 0 || len(p.insns) > maxInsns {
		return fmt.Errorf("seccomp: program has %d instructions", len(p.insns))
	}
	filter := make([]unix.SockFilter, len(p.insns))
	for i, in := range p.insns {
		filter[i] = unix.SockFilter{Code: in.op, Jt: in.jt, Jf: in.jf, K: in.k}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]} //nolint:gosec // len <= maxInsns is checked above

	// no_new_privs belongs to the thread until TSYNC copies it to the
	// others, so both calls must run on the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: set no_new_privs: %w", err)
	}
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))) //nolint:gosec // seccomp(2) takes a struct sock_fprog pointer
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp: install filter: %w", errno)
	}
	if tid != 0 {
		// TSYNC failed: another thread has a filter that is not an
		// ancestor of ours. Nothing was installed.
		return fmt.Errorf("seccomp: install filter: thread %d cannot be synchronized", tid)
	}
	return nil
}
