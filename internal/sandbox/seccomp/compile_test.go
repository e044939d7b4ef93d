package seccomp

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var (
	allArches  = []Arch{AMD64, ARM64, I386, ARM}
	allConfigs = []Config{
		{},
		{AllowUnix: true},
		{DenyInet: true},
		{AllowUnix: true, DenyInet: true},
	}
)

func configName(c Config) string {
	return fmt.Sprintf("unix=%t,inet=%t", c.AllowUnix, !c.DenyInet)
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, arch := range []Arch{AMD64, ARM64} {
		for _, tc := range []struct {
			file string
			cfg  Config
		}{
			{"default", Config{}},
			{"allowunix-denyinet", Config{AllowUnix: true, DenyInet: true}},
		} {
			name := arch.String() + "-" + tc.file
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				p, err := Compile(tc.cfg, arch)
				if err != nil {
					t.Fatal(err)
				}
				got := p.Disassemble()
				path := filepath.Join("testdata", name+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("disassembly differs from %s (-want +got):\n%s", path, diff)
				}
			})
		}
	}
}

func TestCompileValid(t *testing.T) {
	t.Parallel()
	for _, arch := range allArches {
		for _, cfg := range allConfigs {
			t.Run(arch.String()+"/"+configName(cfg), func(t *testing.T) {
				t.Parallel()
				p, err := Compile(cfg, arch)
				if err != nil {
					t.Fatal(err)
				}
				if p.Arch() != arch {
					t.Errorf("Arch() = %v, want %v", p.Arch(), arch)
				}
				if err := check(p); err != nil {
					t.Fatalf("kernel would reject the program: %v", err)
				}
				b, err := p.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if len(b) != 8*len(p.insns) {
					t.Errorf("MarshalBinary: %d bytes for %d instructions", len(b), len(p.insns))
				}
				// The first instruction must check the arch.
				if first := p.insns[0]; first.op != opLdAbs || first.k != offArch {
					t.Errorf("first instruction is %s, want ld [%d]", first.format(0), offArch)
				}
			})
		}
	}
}

func TestCompileUnsupported(t *testing.T) {
	t.Parallel()
	for _, arch := range []Arch{0, 99} {
		if _, err := Compile(Config{}, arch); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Compile(%v) error = %v, want ErrUnsupported", arch, err)
		}
	}
	if _, err := (Program{}).MarshalBinary(); err == nil {
		t.Error("MarshalBinary of the zero Program succeeded")
	}
}

// TestTables checks that every syscall name the compiler uses is known to
// some ABI and that no table holds a name nobody uses.
func TestTables(t *testing.T) {
	t.Parallel()
	used := append(append(slices.Clone(denied), sysvIPC...), "clone3", "clone", "unshare", "ioctl",
		"personality", "socket", "socketpair", "sendto", "sendmsg", "sendmmsg",
		"mknod", "mknodat")
	known := map[string]bool{}
	for _, b := range []*abi{abiX86_64, abiI386, abiAArch64, abiARM} {
		for name := range b.sys {
			known[name] = true
			if !slices.Contains(used, name) {
				t.Errorf("%s: syscall %s is in the table but never used", b.name, name)
			}
		}
		seen := map[uint32]string{}
		for name, nr := range b.sys {
			if other, ok := seen[nr]; ok {
				t.Errorf("%s: %s and %s share number %d", b.name, name, other, nr)
			}
			seen[nr] = name
		}
	}
	for _, name := range used {
		if !known[name] {
			t.Errorf("syscall %s is used but no ABI defines it", name)
		}
	}
}

const (
	allow  = retAllow
	eperm  = retErrno | errnoEPERM
	enosys = retErrno | errnoENOSYS
	kill   = retKillProcess
)

func verdict(v uint32) string {
	switch v {
	case allow:
		return "allow"
	case eperm:
		return "EPERM"
	case enosys:
		return "ENOSYS"
	case kill:
		return "kill"
	}
	return fmt.Sprintf("%#x", v)
}

// sys builds seccomp_data for a syscall of b by name.
func sys(b *abi, name string, args ...uint64) seccompData {
	nr, ok := b.sys[name]
	if !ok {
		panic(b.name + " has no syscall " + name)
	}
	return nrData(b, nr, args...)
}

func nrData(b *abi, nr uint32, args ...uint64) seccompData {
	d := seccompData{nr: nr, arch: b.audit}
	copy(d.args[:], args)
	return d
}

// Constants for the table below, spelled out so the test does not depend on
// the compiler's copies.
const (
	afUnixT, afInetT, afInet6T, afNetlinkT, afPacketT, afVsockT = 1, 2, 10, 16, 17, 40
	sockStreamT, sockDgramT, sockRawT, sockSeqpacketT           = 1, 2, 3, 5
	sockNonblock, sockCloexec                                   = 0x800, 0x80000
	ipprotoTCPT, ipprotoSCTP, ipprotoMPTCP                      = 6, 132, 262
	netlinkKobjectUevent                                        = 15
	cloneNewUserT, cloneNewNS, cloneVM, sigchld                 = 0x10000000, 0x20000, 0x100, 17
	tiocstiT, tioclinuxT, tcgets                                = 0x5412, 0x541c, 0x5401
	addrNoRandomize, readImpliesExec                            = 0x0040000, 0x0400000
	msgFastOpenT, msgDontwait                                   = 0x20000000, 0x40
	hi                                                          = 1 << 32
	sIFCHRT, sIFBLKT, sIFIFO, sIFREG, sIFSOCK                   = 0o020000, 0o060000, 0o010000, 0o100000, 0o140000
	atFdcwd                                                     = 0xffffff9c // AT_FDCWD as a 32-bit int
)

func TestFilter(t *testing.T) {
	t.Parallel()
	// cfgs nil means every Config; only the listed Configs otherwise, with
	// the opposite verdict (want2) for the rest.
	type tc struct {
		name  string
		arch  Arch
		data  seccompData
		want  uint32
		cfgs  func(Config) bool // which Configs get want; the rest get want2
		want2 uint32
	}
	unixDenied := func(c Config) bool { return !c.AllowUnix }
	inetDenied := func(c Config) bool { return c.DenyInet }
	x, i, a, r := abiX86_64, abiI386, abiAArch64, abiARM
	tests := []tc{
		// Arch dispatch.
		{name: "arch/aarch64 on amd64", arch: AMD64, data: seccompData{nr: 39, arch: auditArchAArch64}, want: kill},
		{name: "arch/zero", arch: AMD64, data: seccompData{nr: 39}, want: kill},
		{name: "arch/x86_64 on arm64", arch: ARM64, data: seccompData{nr: 172, arch: auditArchX86_64}, want: kill},
		{name: "arch/big-endian aarch64", arch: ARM64, data: seccompData{nr: 172, arch: 0x800000b7}, want: kill},
		{name: "arch/x86_64 on 386", arch: I386, data: sys(x, "ioctl"), want: kill},
		{name: "arch/aarch64 on arm", arch: ARM, data: sys(a, "ioctl"), want: kill},

		// Plain syscalls stay allowed; the native numbers are not read as
		// compat ones or the other way round.
		{name: "getpid", arch: AMD64, data: nrData(x, 39), want: allow},
		{name: "msync is i386 ptrace", arch: AMD64, data: nrData(x, 26), want: allow},
		{name: "getuid is i386 socketcall", arch: AMD64, data: nrData(x, 102), want: allow},
		{name: "getpid", arch: ARM64, data: nrData(a, 172), want: allow},
		{name: "i386 getpid", arch: AMD64, data: nrData(i, 20), want: allow},
		{name: "i386 ioperm is x86_64 ptrace", arch: AMD64, data: sys(i, "ioperm"), want: eperm},
		{name: "arm getpid", arch: ARM64, data: nrData(r, 20), want: allow},
		{name: "arm nr 117 is aarch64 ptrace", arch: ARM64, data: nrData(r, 117), want: allow},

		// x32.
		{name: "x32/socket", arch: AMD64, data: nrData(x, x32Bit|41, afUnixT, sockStreamT), want: enosys},
		{name: "x32/read", arch: AMD64, data: nrData(x, x32Bit), want: enosys}, // read is nr 0
		{name: "x32/nr -1", arch: AMD64, data: nrData(x, 0xffffffff), want: enosys},

		// Always denied, on every ABI.
		{name: "ptrace", arch: AMD64, data: sys(x, "ptrace"), want: eperm},
		{name: "i386 ptrace", arch: AMD64, data: sys(i, "ptrace"), want: eperm},
		{name: "ptrace", arch: ARM64, data: sys(a, "ptrace"), want: eperm},
		{name: "arm ptrace", arch: ARM64, data: sys(r, "ptrace"), want: eperm},
		{name: "io_uring_setup", arch: AMD64, data: sys(x, "io_uring_setup"), want: eperm},
		{name: "i386 io_uring_enter", arch: AMD64, data: sys(i, "io_uring_enter"), want: eperm},
		{name: "arm io_uring_register", arch: ARM64, data: sys(r, "io_uring_register"), want: eperm},
		{name: "i386 socketcall", arch: AMD64, data: sys(i, "socketcall", 1), want: eperm},
		{name: "i386 socketcall connect", arch: AMD64, data: sys(i, "socketcall", 3), want: eperm},
		{name: "arm OABI socketcall", arch: ARM64, data: sys(r, "socketcall", 1), want: eperm},
		{name: "i386 umount", arch: AMD64, data: sys(i, "umount"), want: eperm},
		{name: "iopl", arch: AMD64, data: sys(x, "iopl", 3), want: eperm},
		{name: "open_by_handle_at", arch: ARM64, data: sys(a, "open_by_handle_at"), want: eperm},
		{name: "i386 kexec_load", arch: I386, data: sys(i, "kexec_load"), want: eperm},
		{name: "arm bpf", arch: ARM, data: sys(r, "bpf"), want: eperm},

		// clone3 falls back to clone.
		{name: "clone3", arch: AMD64, data: sys(x, "clone3"), want: enosys},
		{name: "i386 clone3", arch: AMD64, data: sys(i, "clone3"), want: enosys},
		{name: "clone3", arch: ARM64, data: sys(a, "clone3"), want: enosys},

		// clone and unshare with CLONE_NEWUSER.
		{name: "clone/thread", arch: AMD64, data: sys(x, "clone", cloneVM|sigchld), want: allow},
		{name: "clone/newuser", arch: AMD64, data: sys(x, "clone", cloneNewUserT|sigchld), want: eperm},
		{name: "clone/newuser in high word", arch: AMD64, data: sys(x, "clone", cloneNewUserT<<32|sigchld), want: allow},
		{name: "i386 clone/newuser", arch: AMD64, data: sys(i, "clone", cloneNewUserT), want: eperm},
		{name: "clone/newuser", arch: ARM64, data: sys(a, "clone", cloneNewUserT|sigchld), want: eperm},
		{name: "arm clone/newuser", arch: ARM64, data: sys(r, "clone", cloneNewUserT), want: eperm},
		{name: "unshare/newuser", arch: AMD64, data: sys(x, "unshare", cloneNewUserT|cloneNewNS), want: eperm},
		{name: "unshare/newns", arch: AMD64, data: sys(x, "unshare", cloneNewNS), want: allow},
		{name: "unshare/newuser", arch: ARM64, data: sys(a, "unshare", cloneNewUserT), want: eperm},

		// ioctl: the request is compared on its low 32 bits (CVE-2019-10063).
		{name: "ioctl/TCGETS", arch: AMD64, data: sys(x, "ioctl", 0, tcgets), want: allow},
		{name: "ioctl/TIOCSTI", arch: AMD64, data: sys(x, "ioctl", 0, tiocstiT), want: eperm},
		{name: "ioctl/TIOCSTI|1<<32", arch: AMD64, data: sys(x, "ioctl", 0, tiocstiT|hi), want: eperm},
		{name: "ioctl/TIOCSTI<<32", arch: AMD64, data: sys(x, "ioctl", 0, tiocstiT<<32), want: allow},
		{name: "ioctl/TIOCLINUX", arch: AMD64, data: sys(x, "ioctl", 0, tioclinuxT|hi), want: eperm},
		{name: "i386 ioctl/TIOCSTI", arch: AMD64, data: sys(i, "ioctl", 0, tiocstiT), want: eperm},
		{name: "ioctl/TIOCSTI|1<<32", arch: ARM64, data: sys(a, "ioctl", 0, tiocstiT|hi), want: eperm},
		{name: "arm ioctl/TIOCLINUX", arch: ARM64, data: sys(r, "ioctl", 0, tioclinuxT), want: eperm},
		{name: "ioctl/TCGETS", arch: ARM64, data: sys(a, "ioctl", 0, tcgets), want: allow},

		// personality.
		{name: "personality/PER_LINUX", arch: AMD64, data: sys(x, "personality", 0), want: allow},
		{name: "personality/query", arch: AMD64, data: sys(x, "personality", 0xffffffff), want: allow},
		{name: "personality/PER_LINUX32", arch: ARM64, data: sys(a, "personality", 8), want: allow},
		{name: "personality/ADDR_NO_RANDOMIZE", arch: AMD64, data: sys(x, "personality", addrNoRandomize), want: eperm},
		{name: "personality/READ_IMPLIES_EXEC", arch: ARM64, data: sys(a, "personality", readImpliesExec), want: eperm},
		{name: "i386 personality/ADDR_NO_RANDOMIZE", arch: AMD64, data: sys(i, "personality", addrNoRandomize), want: eperm},

		// socket families.
		{name: "socket/AF_UNIX", arch: AMD64, data: sys(x, "socket", afUnixT, sockStreamT), cfgs: unixDenied, want: eperm, want2: allow},
		{name: "socket/AF_UNIX|1<<32", arch: AMD64, data: sys(x, "socket", afUnixT|hi, sockStreamT), cfgs: unixDenied, want: eperm, want2: allow},
		{name: "socket/AF_UNIX dgram", arch: ARM64, data: sys(a, "socket", afUnixT, sockDgramT|sockCloexec), cfgs: unixDenied, want: eperm, want2: allow},
		{name: "i386 socket/AF_UNIX", arch: AMD64, data: sys(i, "socket", afUnixT, sockStreamT), cfgs: unixDenied, want: eperm, want2: allow},
		{name: "arm socket/AF_UNIX", arch: ARM64, data: sys(r, "socket", afUnixT, sockStreamT), cfgs: unixDenied, want: eperm, want2: allow},
		{name: "socket/AF_VSOCK", arch: AMD64, data: sys(x, "socket", afVsockT, sockStreamT), want: eperm},
		{name: "arm socket/AF_VSOCK", arch: ARM64, data: sys(r, "socket", afVsockT, sockStreamT), want: eperm},
		{name: "socket/AF_PACKET", arch: ARM64, data: sys(a, "socket", afPacketT, sockRawT), want: eperm},
		{name: "socket/AF_ALG", arch: AMD64, data: sys(x, "socket", 38, sockSeqpacketT), want: eperm},
		{name: "socket/AF_NETLINK route", arch: AMD64, data: sys(x, "socket", afNetlinkT, sockRawT|sockCloexec, 0), want: allow},
		{name: "socket/AF_NETLINK uevent", arch: AMD64, data: sys(x, "socket", afNetlinkT, sockRawT, netlinkKobjectUevent), want: eperm},
		{name: "socket/AF_NETLINK route|1<<32", arch: ARM64, data: sys(a, "socket", afNetlinkT, sockDgramT, netlinkKobjectUevent<<32), want: allow},

		// socket: with DenyInet only TCP is left.
		{name: "socket/tcp", arch: AMD64, data: sys(x, "socket", afInetT, sockStreamT|sockNonblock|sockCloexec, 0), want: allow},
		{name: "socket/tcp6", arch: ARM64, data: sys(a, "socket", afInet6T, sockStreamT, ipprotoTCPT), want: allow},
		{name: "i386 socket/tcp", arch: AMD64, data: sys(i, "socket", afInetT, sockStreamT, 0), want: allow},
		{name: "socket/udp", arch: AMD64, data: sys(x, "socket", afInetT, sockDgramT|sockCloexec, 0), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "socket/udp6", arch: ARM64, data: sys(a, "socket", afInet6T, sockDgramT, 0), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "socket/raw", arch: AMD64, data: sys(x, "socket", afInetT, sockRawT, 1), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "socket/sctp stream", arch: AMD64, data: sys(x, "socket", afInetT, sockStreamT, ipprotoSCTP), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "socket/sctp seqpacket", arch: AMD64, data: sys(x, "socket", afInet6T, sockSeqpacketT, ipprotoSCTP), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "socket/mptcp", arch: ARM64, data: sys(a, "socket", afInetT, sockStreamT, ipprotoMPTCP), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "i386 socket/udp", arch: AMD64, data: sys(i, "socket", afInetT, sockDgramT, 0), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "arm socket/udp", arch: ARM64, data: sys(r, "socket", afInetT, sockDgramT, 0), cfgs: inetDenied, want: eperm, want2: allow},

		// socketpair.
		{name: "socketpair/unix stream", arch: AMD64, data: sys(x, "socketpair", afUnixT, sockStreamT|sockCloexec), want: allow},
		{name: "socketpair/unix seqpacket", arch: ARM64, data: sys(a, "socketpair", afUnixT, sockSeqpacketT), want: allow},
		{name: "socketpair/unix dgram", arch: AMD64, data: sys(x, "socketpair", afUnixT, sockDgramT|sockCloexec), cfgs: unixDenied, want: eperm, want2: allow},
		{name: "i386 socketpair/unix dgram", arch: AMD64, data: sys(i, "socketpair", afUnixT, sockDgramT), cfgs: unixDenied, want: eperm, want2: allow},
		{name: "socketpair/inet dgram", arch: AMD64, data: sys(x, "socketpair", afInetT, sockDgramT), want: allow},

		// Device nodes.
		{name: "mknodat/char", arch: AMD64, data: sys(x, "mknodat", atFdcwd, 0, sIFCHRT|0o600, 0x103), want: eperm},
		{name: "mknodat/block", arch: ARM64, data: sys(a, "mknodat", atFdcwd, 0, sIFBLKT|0o600, 0x800), want: eperm},
		{name: "mknodat/fifo", arch: ARM64, data: sys(a, "mknodat", atFdcwd, 0, sIFIFO|0o600), want: allow},
		{name: "mknodat/regular", arch: AMD64, data: sys(x, "mknodat", atFdcwd, 0, sIFREG|0o600), want: allow},
		{name: "mknod/block", arch: AMD64, data: sys(x, "mknod", 0, sIFBLKT|0o600, 0x800), want: eperm},
		{name: "mknod/socket", arch: AMD64, data: sys(x, "mknod", 0, sIFSOCK|0o600), want: allow},
		{name: "i386 mknod/char", arch: AMD64, data: sys(i, "mknod", 0, sIFCHRT), want: eperm},
		{name: "arm mknodat/char", arch: ARM64, data: sys(r, "mknodat", atFdcwd, 0, sIFCHRT), want: eperm},
		{name: "arm mknod/fifo", arch: ARM64, data: sys(r, "mknod", 0, sIFIFO), want: allow},

		// TCP Fast Open connects without connect(2).
		{name: "sendto/plain", arch: AMD64, data: sys(x, "sendto", 3, 0, 1, msgDontwait), want: allow},
		{name: "sendto/MSG_FASTOPEN", arch: AMD64, data: sys(x, "sendto", 3, 0, 1, msgFastOpenT|msgDontwait), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "sendmsg/MSG_FASTOPEN", arch: ARM64, data: sys(a, "sendmsg", 3, 0, msgFastOpenT), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "sendmmsg/MSG_FASTOPEN", arch: AMD64, data: sys(x, "sendmmsg", 3, 0, 1, msgFastOpenT), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "i386 sendto/MSG_FASTOPEN", arch: AMD64, data: sys(i, "sendto", 3, 0, 1, msgFastOpenT), cfgs: inetDenied, want: eperm, want2: allow},
		{name: "arm sendmsg/plain", arch: ARM64, data: sys(r, "sendmsg", 3, 0, 0), want: allow},
	}

	progs := map[Arch]map[Config]Program{}
	for _, arch := range allArches {
		progs[arch] = map[Config]Program{}
		for _, cfg := range allConfigs {
			p, err := Compile(cfg, arch)
			if err != nil {
				t.Fatal(err)
			}
			progs[arch][cfg] = p
		}
	}
	for _, tt := range tests {
		for _, cfg := range allConfigs {
			want := tt.want
			if tt.cfgs != nil && !tt.cfgs(cfg) {
				want = tt.want2
			}
			t.Run(tt.arch.String()+"/"+tt.name+"/"+configName(cfg), func(t *testing.T) {
				got, err := run(progs[tt.arch][cfg], tt.data)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("verdict %s, want %s", verdict(got), verdict(want))
				}
			})
		}
	}
}

// TestFilterDenied runs every always-denied syscall through every section.
func TestFilterDenied(t *testing.T) {
	t.Parallel()
	for _, arch := range allArches {
		for _, cfg := range allConfigs {
			p, err := Compile(cfg, arch)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range arch.abis() {
				for _, name := range denied {
					nr, ok := b.sys[name]
					if !ok {
						continue
					}
					got, err := run(p, nrData(b, nr))
					if err != nil {
						t.Fatal(err)
					}
					if got != eperm {
						t.Errorf("%v/%s/%s/%s: verdict %s, want EPERM", arch, configName(cfg), b.name, name, verdict(got))
					}
				}
			}
		}
	}
}

// checkSysnums compares an ABI table with golang.org/x/sys's numbers for the
// native GOARCH. Names marked OABI only are not in x/sys and are skipped.
func checkSysnums(t *testing.T, b *abi, want map[string]uint32) {
	t.Helper()
	got := map[string]uint32{}
	for name, nr := range b.sys {
		if b == abiARM && (name == "socketcall" || name == "umount") {
			continue
		}
		got[name] = nr
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s syscall numbers differ from golang.org/x/sys (-x/sys +table):\n%s", b.name, diff)
	}
}
