package seccomp

import (
	"errors"
	"fmt"
	"slices"
)

// Config selects the variable parts of the filter. The zero Config refuses
// AF_UNIX sockets and leaves UDP alone.
type Config struct {
	// AllowUnix allows socket(AF_UNIX) and AF_UNIX SOCK_DGRAM socketpairs.
	// Without it the sandbox cannot reach docker.sock and its like (C1).
	AllowUnix bool
	// DenyInet restricts AF_INET and AF_INET6 to plain TCP, the only
	// traffic Landlock confines, and refuses TCP Fast Open sends.
	DenyInet bool
	// DenySysVIPC refuses System V shared memory, semaphores and message
	// queues (and the i386 ipc multiplexer): without an IPC namespace they
	// are shared with the host (threat C10).
	DenySysVIPC bool
}

// Offsets into struct seccomp_data. Arguments are read as their low 32 bits
// (little endian); see the package documentation.
const (
	offNr   = 0
	offArch = 4
)

func offArg(i uint32) uint32 { return 16 + 8*i }

// Kernel constants the filter compares against. They are the same on every
// supported arch.
const (
	cloneNewUser = 0x10000000 // CLONE_NEWUSER

	tiocsti   = 0x5412 // TIOCSTI
	tioclinux = 0x541c // TIOCLINUX

	afUnix    = 1  // AF_UNIX
	afInet    = 2  // AF_INET
	afInet6   = 10 // AF_INET6
	afNetlink = 16 // AF_NETLINK

	netlinkRoute = 0 // NETLINK_ROUTE
	sockTypeMask = 0xf
	sockStream   = 1 // SOCK_STREAM
	sockDgram    = 2 // SOCK_DGRAM
	ipprotoTCP   = 6 // IPPROTO_TCP

	msgFastOpen = 0x20000000 // MSG_FASTOPEN

	sIFMT  = 0o170000 // S_IFMT
	sIFCHR = 0o020000 // S_IFCHR
	sIFBLK = 0o060000 // S_IFBLK
)

// sysvIPC are System V IPC calls, refused with Config.DenySysVIPC.
var sysvIPC = []string{
	"shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop", "semtimedop_time64",
	"msgget", "msgsnd", "msgrcv", "msgctl", "ipc",
}

// denied always fail with EPERM. Names an ABI lacks are skipped.
var denied = []string{
	// C5: io_uring opens sockets and files without the syscalls checked here.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// C8: reaching into other processes.
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	// B7: joining namespaces and changing mounts.
	"setns", "mount", "umount", "umount2", "pivot_root", "move_mount",
	"open_tree", "open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick",
	"mount_setattr",
	// B3/B5: file handles skip path resolution (the "shocker" escape).
	"open_by_handle_at",
	// Kernel attack surface, and the keyring shared with the host user.
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	// Host administration.
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "swapon", "swapoff", "reboot", "acct", "quotactl",
	"quotactl_fd", "lookup_dcookie", "vhangup", "syslog", "iopl", "ioperm",
	// C5: socketcall hides socket(2)'s arguments behind a pointer.
	"socketcall",
}

// personalities are the personality(2) arguments allowed (Docker's set).
var personalities = []struct {
	k    uint32
	name string
}{
	{0x0, "PER_LINUX"},
	{0x8, "PER_LINUX32"},
	{0x20000, "UNAME26"},
	{0x20008, "PER_LINUX32|UNAME26"},
	{0xffffffff, "query"},
}

// Compile builds the filter for cfg and arch. It is pure: the result depends
// only on its arguments, on every OS.
func Compile(cfg Config, arch Arch) (Program, error) {
	abis := arch.abis()
	if abis == nil {
		return Program{}, fmt.Errorf("seccomp: compile for %v: %w", arch, errors.ErrUnsupported)
	}
	a := new(asm)
	a.ld(offArch, "arch")
	sections := make([]label, len(abis))
	for i, b := range abis {
		sections[i] = a.newLabel()
		a.jeq(b.audit, sections[i], next, "AUDIT_ARCH "+b.name)
	}
	a.ret(retKillProcess, "kill process: unknown arch")
	for i, b := range abis {
		a.bind(sections[i])
		if err := section(a, cfg, b); err != nil {
			return Program{}, err
		}
	}
	return a.finish(arch)
}

// section emits the checks for one ABI. Every jump stays inside the
// section.
func section(a *asm, cfg Config, b *abi) error {
	nr := func(name string) (uint32, error) {
		n, ok := b.sys[name]
		if !ok {
			return 0, fmt.Errorf("seccomp: no %s syscall number for %s", name, b.name)
		}
		return n, nil
	}
	allow, eperm, enosys := a.newLabel(), a.newLabel(), a.newLabel()
	type check struct {
		name string
		at   label
		emit func()
	}
	var checks []check

	// clone and unshare share one check: flags are arg0 of both, on every
	// supported ABI.
	newUser := a.newLabel()
	checks = append(checks,
		check{"clone", newUser, func() {
			a.ld(offArg(0), "clone/unshare arg0 (flags)")
			a.jset(cloneNewUser, eperm, allow, "CLONE_NEWUSER")
		}},
		check{"unshare", newUser, nil},
		check{"ioctl", a.newLabel(), func() {
			a.ld(offArg(1), "ioctl arg1 (request)")
			a.jeq(tiocsti, eperm, next, "TIOCSTI")
			a.jeq(tioclinux, eperm, allow, "TIOCLINUX")
		}},
		check{"personality", a.newLabel(), func() {
			a.ld(offArg(0), "personality arg0 (persona)")
			for i, p := range personalities {
				jf := next
				if i == len(personalities)-1 {
					jf = eperm
				}
				a.jeq(p.k, allow, jf, p.name)
			}
		}},
		check{"socket", a.newLabel(), func() { socketCheck(a, cfg, allow, eperm) }},
	)
	// B6: device nodes. Only CAP_MKNOD in the initial user namespace makes
	// them, but the sandbox must not depend on that; FIFOs and sockets stay.
	for _, s := range []struct {
		name string
		arg  uint32
	}{{"mknod", 1}, {"mknodat", 2}} {
		checks = append(checks, check{s.name, a.newLabel(), func() {
			a.ld(offArg(s.arg), fmt.Sprintf("%s arg%d (mode)", s.name, s.arg))
			a.and(sIFMT, "S_IFMT")
			a.jeq(sIFCHR, eperm, next, "S_IFCHR")
			a.jeq(sIFBLK, eperm, allow, "S_IFBLK")
		}})
	}
	if !cfg.AllowUnix {
		checks = append(checks, check{"socketpair", a.newLabel(), func() {
			a.ld(offArg(0), "socketpair arg0 (domain)")
			a.jeq(afUnix, next, allow, "AF_UNIX")
			a.ld(offArg(1), "socketpair arg1 (type)")
			a.and(sockTypeMask, "SOCK_TYPE_MASK")
			a.jeq(sockDgram, eperm, allow, "SOCK_DGRAM")
		}})
	}
	if cfg.DenyInet {
		// The flags argument: sendto(fd, buf, len, flags, ...),
		// sendmsg(fd, msg, flags), sendmmsg(fd, vec, vlen, flags).
		for _, s := range []struct {
			name string
			arg  uint32
		}{{"sendto", 3}, {"sendmsg", 2}, {"sendmmsg", 3}} {
			checks = append(checks, check{s.name, a.newLabel(), func() {
				a.ld(offArg(s.arg), fmt.Sprintf("%s arg%d (flags)", s.name, s.arg))
				a.jset(msgFastOpen, eperm, allow, "MSG_FASTOPEN")
			}})
		}
	}

	checks = slices.DeleteFunc(checks, func(c check) bool {
		_, ok := b.sys[c.name]
		return !ok && c.name == "mknod" // aarch64 only has mknodat
	})

	a.ld(offNr, b.name+" nr")
	if b.x32 {
		a.jset(x32Bit, enosys, next, "x32 ABI")
	}
	// Syscalls with argument checks come first: the kernel cannot cache
	// their verdict, and some (ioctl, sendmsg) are hot.
	for _, c := range checks {
		n, err := nr(c.name)
		if err != nil {
			return err
		}
		a.jeq(n, c.at, next, c.name)
	}
	n, err := nr("clone3")
	if err != nil {
		return err
	}
	a.jeq(n, enosys, next, "clone3")
	for _, name := range denied {
		if n, ok := b.sys[name]; ok {
			a.jeq(n, eperm, next, name)
		}
	}
	if cfg.DenySysVIPC {
		for _, name := range sysvIPC {
			if n, ok := b.sys[name]; ok {
				a.jeq(n, eperm, next, name)
			}
		}
	}
	a.ret(retAllow, "allow")

	for _, c := range checks {
		if c.emit == nil {
			continue
		}
		a.bind(c.at)
		c.emit()
	}
	a.bind(allow)
	a.ret(retAllow, "allow")
	a.bind(eperm)
	a.ret(retErrno|errnoEPERM, "errno EPERM")
	a.bind(enosys)
	a.ret(retErrno|errnoENOSYS, "errno ENOSYS")
	return nil
}

// socketCheck emits the socket(domain, type, protocol) allow list.
func socketCheck(a *asm, cfg Config, allow, eperm label) {
	inet, netlink := allow, a.newLabel()
	if cfg.DenyInet {
		inet = a.newLabel()
	}
	a.ld(offArg(0), "socket arg0 (domain)")
	a.jeq(afInet, inet, next, "AF_INET")
	a.jeq(afInet6, inet, next, "AF_INET6")
	if cfg.AllowUnix {
		a.jeq(afUnix, allow, next, "AF_UNIX")
	}
	a.jeq(afNetlink, netlink, eperm, "AF_NETLINK")

	a.bind(netlink)
	a.ld(offArg(2), "socket arg2 (protocol)")
	a.jeq(netlinkRoute, allow, eperm, "NETLINK_ROUTE")

	if cfg.DenyInet {
		a.bind(inet)
		a.ld(offArg(1), "socket arg1 (type)")
		a.and(sockTypeMask, "SOCK_TYPE_MASK")
		a.jeq(sockStream, next, eperm, "SOCK_STREAM")
		a.ld(offArg(2), "socket arg2 (protocol)")
		a.jeq(0, allow, next, "default protocol")
		a.jeq(ipprotoTCP, allow, eperm, "IPPROTO_TCP")
	}
}
