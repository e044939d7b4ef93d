//go:build linux && arm

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestSysnums(t *testing.T) {
	t.Parallel()
	checkSysnums(t, abiARM, map[string]uint32{
		"mount":             unix.SYS_MOUNT,
		"ptrace":            unix.SYS_PTRACE,
		"acct":              unix.SYS_ACCT,
		"umount2":           unix.SYS_UMOUNT2,
		"ioctl":             unix.SYS_IOCTL,
		"swapon":            unix.SYS_SWAPON,
		"reboot":            unix.SYS_REBOOT,
		"syslog":            unix.SYS_SYSLOG,
		"vhangup":           unix.SYS_VHANGUP,
		"swapoff":           unix.SYS_SWAPOFF,
		"clone":             unix.SYS_CLONE,
		"init_module":       unix.SYS_INIT_MODULE,
		"delete_module":     unix.SYS_DELETE_MODULE,
		"quotactl":          unix.SYS_QUOTACTL,
		"personality":       unix.SYS_PERSONALITY,
		"pivot_root":        unix.SYS_PIVOT_ROOT,
		"lookup_dcookie":    unix.SYS_LOOKUP_DCOOKIE,
		"socket":            unix.SYS_SOCKET,
		"socketpair":        unix.SYS_SOCKETPAIR,
		"sendto":            unix.SYS_SENDTO,
		"sendmsg":           unix.SYS_SENDMSG,
		"add_key":           unix.SYS_ADD_KEY,
		"request_key":       unix.SYS_REQUEST_KEY,
		"keyctl":            unix.SYS_KEYCTL,
		"unshare":           unix.SYS_UNSHARE,
		"kexec_load":        unix.SYS_KEXEC_LOAD,
		"perf_event_open":   unix.SYS_PERF_EVENT_OPEN,
		"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
		"sendmmsg":          unix.SYS_SENDMMSG,
		"setns":             unix.SYS_SETNS,
		"process_vm_readv":  unix.SYS_PROCESS_VM_READV,
		"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"finit_module":      unix.SYS_FINIT_MODULE,
		"bpf":               unix.SYS_BPF,
		"userfaultfd":       unix.SYS_USERFAULTFD,
		"kexec_file_load":   unix.SYS_KEXEC_FILE_LOAD,
		"io_uring_setup":    unix.SYS_IO_URING_SETUP,
		"io_uring_enter":    unix.SYS_IO_URING_ENTER,
		"io_uring_register": unix.SYS_IO_URING_REGISTER,
		"open_tree":         unix.SYS_OPEN_TREE,
		"move_mount":        unix.SYS_MOVE_MOUNT,
		"fsopen":            unix.SYS_FSOPEN,
		"fsconfig":          unix.SYS_FSCONFIG,
		"fsmount":           unix.SYS_FSMOUNT,
		"fspick":            unix.SYS_FSPICK,
		"clone3":            unix.SYS_CLONE3,
		"pidfd_getfd":       unix.SYS_PIDFD_GETFD,
		"mount_setattr":     unix.SYS_MOUNT_SETATTR,
		"quotactl_fd":       unix.SYS_QUOTACTL_FD,
		"open_tree_attr":    unix.SYS_OPEN_TREE_ATTR,
	})
}
