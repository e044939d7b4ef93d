package seccomp

import "fmt"

// Arch is a CPU architecture a [Program] is compiled for. A program for a
// 64-bit arch also covers that arch's 32-bit compat ABI.
type Arch uint8

// Supported architectures, named after GOARCH.
const (
	AMD64 Arch = iota + 1 // x86_64, with the i386 compat ABI; x32 is refused
	ARM64                 // aarch64, with the 32-bit arm compat ABI
	I386                  // i386 (GOARCH 386)
	ARM                   // 32-bit arm, EABI (and OABI numbers where they differ)
)

func (a Arch) String() string {
	switch a {
	case AMD64:
		return "amd64"
	case ARM64:
		return "arm64"
	case I386:
		return "386"
	case ARM:
		return "arm"
	}
	return fmt.Sprintf("Arch(%d)", uint8(a))
}

// archFromGOARCH maps a GOARCH value to an Arch.
func archFromGOARCH(goarch string) (Arch, bool) {
	for _, a := range []Arch{AMD64, ARM64, I386, ARM} {
		if a.String() == goarch {
			return a, true
		}
	}
	return 0, false
}

// abi is one value of seccomp_data.arch with its syscall numbers.
type abi struct {
	name  string // shown in the disassembly
	audit uint32 // AUDIT_ARCH_*
	x32   bool   // refuse numbers with the x32 bit set
	sys   map[string]uint32
}

// abis lists the sections of a program, native ABI first.
func (a Arch) abis() []*abi {
	switch a {
	case AMD64:
		return []*abi{abiX86_64, abiI386}
	case ARM64:
		return []*abi{abiAArch64, abiARM}
	case I386:
		return []*abi{abiI386}
	case ARM:
		return []*abi{abiARM}
	}
	return nil
}

// Audit arch values from <linux/audit.h>. The little-endian ones only: the
// argument offsets in compile.go assume little endian, and every other value
// fails closed.
const (
	auditArchX86_64  = 0xc000003e
	auditArchI386    = 0x40000003
	auditArchAArch64 = 0xc00000b7
	auditArchARM     = 0x40000028
)

// x32Bit is __X32_SYSCALL_BIT.
const x32Bit = 0x40000000

// The syscall tables hold every name compile.go refers to that the ABI has.
// A name missing from a table is a syscall the ABI lacks. The numbers come
// from the kernel's syscall tables and are checked against golang.org/x/sys
// by sysnum_linux_*_test.go on each native arch.

var abiX86_64 = &abi{
	name:  "x86_64",
	audit: auditArchX86_64,
	x32:   true,
	sys: map[string]uint32{
		"shmget":            29,
		"shmat":             30,
		"shmctl":            31,
		"semget":            64,
		"semop":             65,
		"semctl":            66,
		"shmdt":             67,
		"msgget":            68,
		"msgsnd":            69,
		"msgrcv":            70,
		"msgctl":            71,
		"semtimedop":        220,
		"ioctl":             16,
		"socket":            41,
		"sendto":            44,
		"sendmsg":           46,
		"socketpair":        53,
		"clone":             56,
		"ptrace":            101,
		"syslog":            103,
		"mknod":             133,
		"personality":       135,
		"vhangup":           153,
		"pivot_root":        155,
		"acct":              163,
		"mount":             165,
		"umount2":           166,
		"swapon":            167,
		"swapoff":           168,
		"reboot":            169,
		"iopl":              172,
		"ioperm":            173,
		"init_module":       175,
		"delete_module":     176,
		"quotactl":          179,
		"lookup_dcookie":    212,
		"kexec_load":        246,
		"add_key":           248,
		"request_key":       249,
		"keyctl":            250,
		"mknodat":           259,
		"unshare":           272,
		"perf_event_open":   298,
		"open_by_handle_at": 304,
		"sendmmsg":          307,
		"setns":             308,
		"process_vm_readv":  310,
		"process_vm_writev": 311,
		"finit_module":      313,
		"kexec_file_load":   320,
		"bpf":               321,
		"userfaultfd":       323,
		"io_uring_setup":    425,
		"io_uring_enter":    426,
		"io_uring_register": 427,
		"open_tree":         428,
		"move_mount":        429,
		"fsopen":            430,
		"fsconfig":          431,
		"fsmount":           432,
		"fspick":            433,
		"clone3":            435,
		"pidfd_getfd":       438,
		"mount_setattr":     442,
		"quotactl_fd":       443,
		"open_tree_attr":    467,
	},
}

var abiI386 = &abi{
	name:  "i386",
	audit: auditArchI386,
	sys: map[string]uint32{
		"ipc":               117,
		"semget":            393,
		"semctl":            394,
		"shmget":            395,
		"shmctl":            396,
		"shmat":             397,
		"shmdt":             398,
		"msgget":            399,
		"msgsnd":            400,
		"msgrcv":            401,
		"msgctl":            402,
		"semtimedop_time64": 420,
		"mknod":             14,
		"mount":             21,
		"umount":            22,
		"ptrace":            26,
		"acct":              51,
		"umount2":           52,
		"ioctl":             54,
		"swapon":            87,
		"reboot":            88,
		"ioperm":            101,
		"socketcall":        102,
		"syslog":            103,
		"iopl":              110,
		"vhangup":           111,
		"swapoff":           115,
		"clone":             120,
		"init_module":       128,
		"delete_module":     129,
		"quotactl":          131,
		"personality":       136,
		"pivot_root":        217,
		"lookup_dcookie":    253,
		"kexec_load":        283,
		"add_key":           286,
		"request_key":       287,
		"keyctl":            288,
		"mknodat":           297,
		"unshare":           310,
		"perf_event_open":   336,
		"open_by_handle_at": 342,
		"sendmmsg":          345,
		"setns":             346,
		"process_vm_readv":  347,
		"process_vm_writev": 348,
		"finit_module":      350,
		"bpf":               357,
		"socket":            359,
		"socketpair":        360,
		"sendto":            369,
		"sendmsg":           370,
		"userfaultfd":       374,
		"io_uring_setup":    425,
		"io_uring_enter":    426,
		"io_uring_register": 427,
		"open_tree":         428,
		"move_mount":        429,
		"fsopen":            430,
		"fsconfig":          431,
		"fsmount":           432,
		"fspick":            433,
		"clone3":            435,
		"pidfd_getfd":       438,
		"mount_setattr":     442,
		"quotactl_fd":       443,
		"open_tree_attr":    467,
	},
}

var abiAArch64 = &abi{
	name:  "aarch64",
	audit: auditArchAArch64,
	sys: map[string]uint32{
		"msgget":            186,
		"msgctl":            187,
		"msgrcv":            188,
		"msgsnd":            189,
		"semget":            190,
		"semctl":            191,
		"semtimedop":        192,
		"semop":             193,
		"shmget":            194,
		"shmctl":            195,
		"shmat":             196,
		"shmdt":             197,
		"lookup_dcookie":    18,
		"ioctl":             29,
		"mknodat":           33,
		"umount2":           39,
		"mount":             40,
		"pivot_root":        41,
		"vhangup":           58,
		"quotactl":          60,
		"acct":              89,
		"personality":       92,
		"unshare":           97,
		"kexec_load":        104,
		"init_module":       105,
		"delete_module":     106,
		"syslog":            116,
		"ptrace":            117,
		"reboot":            142,
		"socket":            198,
		"socketpair":        199,
		"sendto":            206,
		"sendmsg":           211,
		"add_key":           217,
		"request_key":       218,
		"keyctl":            219,
		"clone":             220,
		"swapon":            224,
		"swapoff":           225,
		"perf_event_open":   241,
		"open_by_handle_at": 265,
		"setns":             268,
		"sendmmsg":          269,
		"process_vm_readv":  270,
		"process_vm_writev": 271,
		"finit_module":      273,
		"bpf":               280,
		"userfaultfd":       282,
		"kexec_file_load":   294,
		"io_uring_setup":    425,
		"io_uring_enter":    426,
		"io_uring_register": 427,
		"open_tree":         428,
		"move_mount":        429,
		"fsopen":            430,
		"fsconfig":          431,
		"fsmount":           432,
		"fspick":            433,
		"clone3":            435,
		"pidfd_getfd":       438,
		"mount_setattr":     442,
		"quotactl_fd":       443,
		"open_tree_attr":    467,
	},
}

var abiARM = &abi{
	name:  "arm",
	audit: auditArchARM,
	sys: map[string]uint32{
		"semop":             298,
		"semget":            299,
		"semctl":            300,
		"msgsnd":            301,
		"msgrcv":            302,
		"msgget":            303,
		"msgctl":            304,
		"shmat":             305,
		"shmdt":             306,
		"shmget":            307,
		"shmctl":            308,
		"semtimedop":        312,
		"semtimedop_time64": 420,
		"mknod":             14,
		"mount":             21,
		"umount":            22, // OABI only
		"ptrace":            26,
		"acct":              51,
		"umount2":           52,
		"ioctl":             54,
		"swapon":            87,
		"reboot":            88,
		"socketcall":        102, // OABI only
		"syslog":            103,
		"vhangup":           111,
		"swapoff":           115,
		"clone":             120,
		"init_module":       128,
		"delete_module":     129,
		"quotactl":          131,
		"personality":       136,
		"pivot_root":        218,
		"lookup_dcookie":    249,
		"socket":            281,
		"socketpair":        288,
		"sendto":            290,
		"sendmsg":           296,
		"add_key":           309,
		"request_key":       310,
		"keyctl":            311,
		"mknodat":           324,
		"unshare":           337,
		"kexec_load":        347,
		"perf_event_open":   364,
		"open_by_handle_at": 371,
		"sendmmsg":          374,
		"setns":             375,
		"process_vm_readv":  376,
		"process_vm_writev": 377,
		"finit_module":      379,
		"bpf":               386,
		"userfaultfd":       388,
		"kexec_file_load":   401,
		"io_uring_setup":    425,
		"io_uring_enter":    426,
		"io_uring_register": 427,
		"open_tree":         428,
		"move_mount":        429,
		"fsopen":            430,
		"fsconfig":          431,
		"fsmount":           432,
		"fspick":            433,
		"clone3":            435,
		"pidfd_getfd":       438,
		"mount_setattr":     442,
		"quotactl_fd":       443,
		"open_tree_attr":    467,
	},
}
