//go:build linux && arm64

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestSysnums(t *testing.T) {
	t.Parallel()
	checkSysnums(t, abiAArch64, map[string]uint32{
		"lookup_dcookie":    unix.SYS_LOOKUP_DCOOKIE,
		"ioctl":             unix.SYS_IOCTL,
		"mknodat":           unix.SYS_MKNODAT,
		"umount2":           unix.SYS_UMOUNT2,
		"mount":             unix.SYS_MOUNT,
		"pivot_root":        unix.SYS_PIVOT_ROOT,
		"vhangup":           unix.SYS_VHANGUP,
		"quotactl":          unix.SYS_QUOTACTL,
		"acct":              unix.SYS_ACCT,
		"personality":       unix.SYS_PERSONALITY,
		"unshare":           unix.SYS_UNSHARE,
		"kexec_load":        unix.SYS_KEXEC_LOAD,
		"init_module":       unix.SYS_INIT_MODULE,
		"delete_module":     unix.SYS_DELETE_MODULE,
		"syslog":            unix.SYS_SYSLOG,
		"ptrace":            unix.SYS_PTRACE,
		"reboot":            unix.SYS_REBOOT,
		"socket":            unix.SYS_SOCKET,
		"socketpair":        unix.SYS_SOCKETPAIR,
		"sendto":            unix.SYS_SENDTO,
		"sendmsg":           unix.SYS_SENDMSG,
		"add_key":           unix.SYS_ADD_KEY,
		"request_key":       unix.SYS_REQUEST_KEY,
		"keyctl":            unix.SYS_KEYCTL,
		"clone":             unix.SYS_CLONE,
		"swapon":            unix.SYS_SWAPON,
		"swapoff":           unix.SYS_SWAPOFF,
		"perf_event_open":   unix.SYS_PERF_EVENT_OPEN,
		"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
		"setns":             unix.SYS_SETNS,
		"sendmmsg":          unix.SYS_SENDMMSG,
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
		"shmget":            unix.SYS_SHMGET,
		"shmat":             unix.SYS_SHMAT,
		"shmctl":            unix.SYS_SHMCTL,
		"semget":            unix.SYS_SEMGET,
		"semop":             unix.SYS_SEMOP,
		"semctl":            unix.SYS_SEMCTL,
		"shmdt":             unix.SYS_SHMDT,
		"msgget":            unix.SYS_MSGGET,
		"msgsnd":            unix.SYS_MSGSND,
		"msgrcv":            unix.SYS_MSGRCV,
		"msgctl":            unix.SYS_MSGCTL,
		"semtimedop":        unix.SYS_SEMTIMEDOP,
	})
}
