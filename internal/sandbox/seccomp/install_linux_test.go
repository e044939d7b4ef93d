//go:build linux

package seccomp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// The filter cannot be removed once installed, so TestInstall re-executes
// the test binary and the child installs it (style.md B.1.3). The child
// reports each probe's errno name, or "ok", as JSON on stdout.
const (
	envChild  = "WARDEN_SECCOMP_TEST_CHILD"  // "probe" or "status"
	envConfig = "WARDEN_SECCOMP_TEST_CONFIG" // "unix", "inet", both comma-separated
)

func init() {
	if os.Getenv(envChild) != "" {
		// Keep the main goroutine on the thread group leader, so that
		// PTRACE_TRACEME, should the filter let it through, traces the
		// leader, which the parent's Wait reaps, and not a thread that
		// nobody waits for.
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "":
		os.Exit(m.Run())
	case "probe":
		os.Exit(probeChild())
	case "status":
		os.Exit(statusChild())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", envChild, os.Getenv(envChild))
		os.Exit(2)
	}
}

// notEPERM in an expectation accepts any result but EPERM: the probe's
// answer without the filter depends on the host (modules, sysctls).
const notEPERM = "!EPERM"

func TestInstall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("installs real filters in subprocesses")
	}
	if _, err := NativeArch(); err != nil {
		t.Skip(err)
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		t.Skipf("kernel without seccomp: %v", err)
	}
	for _, cfg := range allConfigs {
		t.Run(configName(cfg), func(t *testing.T) {
			t.Parallel()
			unixWant, udpWant, sctpWant := "EPERM", "ok", notEPERM
			if cfg.AllowUnix {
				unixWant = "ok"
			}
			if cfg.DenyInet {
				udpWant, sctpWant = "EPERM", "EPERM"
			}
			want := map[string]string{
				"install foreign arch": "refused",

				"getpid":                 "ok",
				"open":                   "ok",
				"exec":                   "ok",
				"socket tcp":             "ok",
				"socket tcp IPPROTO_TCP": "ok",
				"socket netlink route":   "ok",
				"socketpair unix stream": "ok",
				"personality query":      "ok",
				"ioctl TIOCGWINSZ":       "ENOTTY",
				"unshare CLONE_NEWNS":    notEPERM,

				"socket unix":              unixWant,
				"socket unix high bits":    unixWant,
				"socketpair unix dgram":    unixWant,
				"tsync thread socket unix": unixWant,
				"socket udp":               udpWant,
				"socket sctp":              sctpWant,
				"sendto MSG_FASTOPEN":      sctpWant,

				"socket vsock":          "EPERM",
				"socket packet":         "EPERM",
				"socket netlink uevent": "EPERM",
				"io_uring_setup":        "EPERM",
				"ptrace TRACEME":        "EPERM",
				"process_vm_readv":      "EPERM",
				"pidfd_getfd":           "EPERM",
				"ioctl TIOCSTI":         "EPERM",
				"ioctl TIOCSTI|1<<32":   "EPERM",
				"ioctl TIOCLINUX":       "EPERM",
				"unshare CLONE_NEWUSER": "EPERM",
				"clone CLONE_NEWUSER":   "EPERM",
				"clone3":                "ENOSYS",
				"bpf":                   "EPERM",
				"keyctl":                "EPERM",
				"perf_event_open":       "EPERM",
				"mount":                 "EPERM",
				"setns":                 "EPERM",
				"open_by_handle_at":     "EPERM",
				"userfaultfd":           "EPERM",
				"personality no ASLR":   "EPERM",
				"mknodat char":          "EPERM",
				"mknodat fifo":          notEPERM,
			}
			if runtime.GOARCH == "386" {
				want["socketcall"] = "EPERM"
			}
			got := runProbeChild(t, cfg)
			for k, v := range want {
				if v == notEPERM && got[k] != "EPERM" {
					got[k] = notEPERM
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("probe results under the filter (-want +got):\n%s", diff)
			}
		})
	}
}

func runProbeChild(t *testing.T, cfg Config) map[string]string {
	t.Helper()
	var flags []string
	if cfg.AllowUnix {
		flags = append(flags, "unix")
	}
	if cfg.DenyInet {
		flags = append(flags, "inet")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(childEnv(), envChild+"=probe", envConfig+"="+strings.Join(flags, ","))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe child: %v\nstderr:\n%s", err, stderr.String())
	}
	var got map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("probe child output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return got
}

// childEnv is the environment without this test's own variables.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, envChild+"=") || strings.HasPrefix(kv, envConfig+"=")
	})
}

// probeChild installs the filter and runs the probes. It runs in its own
// process and never returns to the test framework.
func probeChild() int {
	var cfg Config
	for f := range strings.SplitSeq(os.Getenv(envConfig), ",") {
		switch f {
		case "unix":
			cfg.AllowUnix = true
		case "inet":
			cfg.DenyInet = true
		}
	}
	results := map[string]string{}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return 1
	}

	native, err := NativeArch()
	if err != nil {
		return fail("%v", err)
	}
	foreign := ARM64
	if native == ARM64 {
		foreign = AMD64
	}
	fp, err := Compile(cfg, foreign)
	if err != nil {
		return fail("%v", err)
	}
	results["install foreign arch"] = "installed"
	if err := Install(fp); err != nil {
		results["install foreign arch"] = "refused"
	}

	// A thread that exists before Install is only filtered through TSYNC.
	ready, do, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		runtime.LockOSThread()
		close(ready)
		<-do
		done <- socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	}()
	<-ready

	p, err := Compile(cfg, native)
	if err != nil {
		return fail("%v", err)
	}
	if err := Install(p); err != nil {
		return fail("%v", err)
	}
	close(do)
	results["tsync thread socket unix"] = result(<-done)

	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		return fail("pipe: %v", err)
	}
	var c byte = 'x'
	// On 32-bit the high word is truncated away here; the kernel does the
	// same on 64-bit.
	tiocstiHigh := uint64(unix.TIOCSTI) | 1<<32
	cp := uintptr(unsafe.Pointer(&c))
	var params [120]byte // struct io_uring_params
	var stack [64]byte
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}

	probes := map[string]func() error{
		"getpid": func() error { return rawSys(unix.SYS_GETPID) },
		"open": func() error {
			fd, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			return err
		},
		// exec also shows that the filter is inherited. The child's
		// environment must not say "probe", or it would recurse.
		"exec": func() error {
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(childEnv(), envChild+"=status")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		},
		"socket tcp":             func() error { return socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0) },
		"socket tcp IPPROTO_TCP": func() error { return socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP) },
		"socket udp":             func() error { return socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0) },
		"socket sctp":            func() error { return socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP) },
		"socket netlink route":   func() error { return socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) },
		"socket netlink uevent":  func() error { return socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_KOBJECT_UEVENT) },
		"socket unix":            func() error { return socket(unix.AF_UNIX, unix.SOCK_STREAM, 0) },
		"socket unix high bits":  func() error { return socket(unix.AF_UNIX|1<<32, unix.SOCK_STREAM, 0) },
		"socket vsock":           func() error { return socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0) },
		"socket packet":          func() error { return socket(unix.AF_PACKET, unix.SOCK_RAW, 0) },
		"socketpair unix stream": func() error { return socketpair(unix.SOCK_STREAM) },
		"socketpair unix dgram":  func() error { return socketpair(unix.SOCK_DGRAM) },
		"sendto MSG_FASTOPEN": func() error {
			fd, _, errno := unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if errno != 0 {
				return errno
			}
			defer unix.Close(int(fd))
			// Port 1 on loopback: refused if the SYN goes out.
			sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
			binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], 1)
			return rawSys(unix.SYS_SENDTO, fd, cp, 1, unix.MSG_FASTOPEN|unix.MSG_DONTWAIT,
				uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
		},
		"io_uring_setup": func() error {
			return rawSys(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)))
		},
		"ptrace TRACEME":      func() error { return rawSys(unix.SYS_PTRACE, unix.PTRACE_TRACEME) },
		"process_vm_readv":    func() error { return rawSys(unix.SYS_PROCESS_VM_READV, uintptr(os.Getpid())) },
		"pidfd_getfd":         func() error { return rawSys(unix.SYS_PIDFD_GETFD, ^uintptr(0), ^uintptr(0)) },
		"ioctl TIOCSTI":       func() error { return rawSys(unix.SYS_IOCTL, uintptr(pipe[0]), unix.TIOCSTI, cp) },
		"ioctl TIOCSTI|1<<32": func() error { return rawSys(unix.SYS_IOCTL, uintptr(pipe[0]), uintptr(tiocstiHigh), cp) },
		"ioctl TIOCLINUX":     func() error { return rawSys(unix.SYS_IOCTL, uintptr(pipe[0]), unix.TIOCLINUX, cp) },
		"ioctl TIOCGWINSZ": func() error {
			_, err := unix.IoctlGetWinsize(pipe[0], unix.TIOCGWINSZ)
			return err
		},
		// unshare(CLONE_NEWUSER) fails with EINVAL in a multithreaded
		// process, so EPERM can only come from the filter.
		"unshare CLONE_NEWUSER": func() error { return rawSys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) },
		"unshare CLONE_NEWNS":   func() error { return rawSys(unix.SYS_UNSHARE, 0xffffffff&^unix.CLONE_NEWUSER) },
		// CLONE_NEWUSER|CLONE_FS is EINVAL, so nothing forks if the
		// filter lets it through.
		"clone CLONE_NEWUSER": func() error {
			return rawSys(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS, uintptr(unsafe.Pointer(&stack[32])))
		},
		// A zero size is EINVAL without the filter.
		"clone3":          func() error { return rawSys(unix.SYS_CLONE3, 0, 0) },
		"bpf":             func() error { return rawSys(unix.SYS_BPF, 0xffff) },
		"keyctl":          func() error { return rawSys(unix.SYS_KEYCTL, 0xffff) },
		"perf_event_open": func() error { return rawSys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0)) },
		"mount":           func() error { return rawSys(unix.SYS_MOUNT) },
		"setns":           func() error { return rawSys(unix.SYS_SETNS, ^uintptr(0)) },
		"open_by_handle_at": func() error {
			return rawSys(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, unix.O_RDONLY)
		},
		"userfaultfd": func() error { return rawSys(unix.SYS_USERFAULTFD, unix.O_CLOEXEC) },
		// A NULL path is EFAULT without the filter: nothing is created.
		"mknodat char": func() error {
			return rawSys(unix.SYS_MKNODAT, atFdcwd, 0, unix.S_IFCHR|0o600, 0x103)
		},
		"mknodat fifo":        func() error { return rawSys(unix.SYS_MKNODAT, atFdcwd, 0, unix.S_IFIFO|0o600) },
		"personality query":   func() error { return rawSys(unix.SYS_PERSONALITY, 0xffffffff) },
		"personality no ASLR": func() error { return rawSys(unix.SYS_PERSONALITY, addrNoRandomize) },
	}
	// PTRACE_TRACEME goes last, on the main thread (see init): had the
	// filter let it through, a later exec would stop on SIGTRAP for a
	// tracer that never comes.
	const traceMe = "ptrace TRACEME"
	if runtime.GOARCH == "386" {
		// Go's own 386 socket calls use socketcall(2); see the package doc.
		probes["socketcall"] = func() error {
			args := [3]uintptr{unix.AF_INET, unix.SOCK_STREAM, 0}
			return rawSys(uintptr(abiI386.sys["socketcall"]), 1, uintptr(unsafe.Pointer(&args)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		if name != traceMe {
			results[name] = result(probes[name]())
		}
	}
	results[traceMe] = result(probes[traceMe]())
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		return fail("%v", err)
	}
	return 0
}

// statusChild checks that a process started under the filter inherits it.
func statusChild() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := string(b)
	if !strings.Contains(s, "\nSeccomp:\t2\n") || !strings.Contains(s, "\nNoNewPrivs:\t1\n") {
		fmt.Fprintf(os.Stderr, "filter not inherited:\n%s", s)
		return 1
	}
	return 0
}

// rawSys makes a raw syscall with up to six arguments and returns its errno.
func rawSys(nr uintptr, args ...uintptr) error {
	var a [6]uintptr
	copy(a[:], args)
	_, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	if errno != 0 {
		return errno
	}
	return nil
}

// socket calls socket(2) raw, so a domain with high bits set reaches the
// kernel as is, and closes the result.
func socket(domain, typ, proto uint64) error {
	fd, _, errno := unix.Syscall(unix.SYS_SOCKET, uintptr(domain), uintptr(typ), uintptr(proto))
	if errno != 0 {
		return errno
	}
	return unix.Close(int(fd))
}

// socketpair calls socketpair(2) raw: on 386, x/sys would go through
// socketcall, which the filter refuses.
func socketpair(typ uintptr) error {
	var fds [2]int32
	_, _, errno := unix.Syscall6(unix.SYS_SOCKETPAIR, unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0,
		uintptr(unsafe.Pointer(&fds)), 0, 0)
	if errno != 0 {
		return errno
	}
	unix.Close(int(fds[0]))
	return unix.Close(int(fds[1]))
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	if errno, ok := errors.AsType[unix.Errno](err); ok {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}
