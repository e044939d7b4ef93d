// Package seccomp compiles warden's seccomp policy into classic BPF and
// installs it.
//
// The filter is a deny list. It complements namespaces (bwrap) and Landlock:
// those decide which files and ports are reachable, and seccomp closes the
// kernel interfaces that walk around them (threats.md B6/B7, C1, C5, C7, C8,
// D1, D2). Everything not named below is allowed.
//
// [Compile] is pure and builds on every OS, so the program is golden-tested as
// a disassembly anywhere; [Install] is Linux-only and must run in the re-exec'd
// sandbox child, because a filter can never be removed. For bwrap's
// --seccomp FD, hand it [Program.MarshalBinary].
//
// # Program layout
//
// The program first checks seccomp_data.arch. Each supported audit arch gets
// its own section with that ABI's syscall numbers: an amd64 program covers
// x86_64 and i386 (int 0x80 and 32-bit processes), an arm64 program covers
// aarch64 and 32-bit arm. Any other arch value, including the big-endian
// variants, kills the process: the argument offsets below assume little
// endian, so failing closed is the only safe answer. On x86_64 any syscall
// number with the x32 bit (0x40000000) set fails with ENOSYS before it is
// compared, so the x32 table can never be used to dodge the x86_64 numbers;
// ENOSYS is what a kernel built without x32 (the common case) answers, so an
// x32 program sees an ordinary kernel, and it has no other ABI to fall back to.
//
// Syscalls fail with EPERM except clone3, which fails with ENOSYS: its flags
// sit behind a pointer that seccomp cannot read, and ENOSYS makes glibc (and
// Go) fall back to clone, whose flags are checked. Docker and Codex do the
// same.
//
// # Arguments
//
// seccomp_data.args are 64-bit. Every argument checked here is an int or an
// unsigned int in the kernel (socket domain, type and protocol, ioctl request,
// personality, send flags) or is truncated to 32 bits before use (clone
// flags), so only the low word, at offset 16+8*i, is compared and the high
// word is ignored. Comparing the full 64 bits would be wrong: ioctl(fd,
// TIOCSTI|1<<32) reaches the kernel as TIOCSTI (CVE-2019-10063). Compat
// (i386, arm) arguments are 32-bit anyway.
//
// # Filtered syscalls
//
// Always EPERM: io_uring_setup, io_uring_enter and io_uring_register
// (IORING_OP_SOCKET and friends bypass the socket checks, C5); ptrace,
// process_vm_readv, process_vm_writev and pidfd_getfd (C8); setns and the
// mount API: mount, umount, umount2, pivot_root, move_mount, open_tree,
// open_tree_attr, fsopen, fsconfig, fsmount, fspick and mount_setattr (B7);
// open_by_handle_at (the "shocker" escape: file handles skip path checks;
// name_to_handle_at stays, it only describes a file already reachable); bpf,
// perf_event_open, userfaultfd, keyctl, add_key and request_key (kernel attack
// surface, and the keyring is shared with the host user); kexec_load,
// kexec_file_load, init_module, finit_module, delete_module, swapon, swapoff,
// reboot, acct, quotactl, quotactl_fd, lookup_dcookie, vhangup, syslog, iopl
// and ioperm (host administration); and socketcall on i386 and arm (OABI),
// whose arguments sit behind a pointer, so AF_UNIX and the rest could be
// created through it (C5). 32-bit programs must use the direct socket
// syscalls, which every kernel since 4.3 has; those still on socketcall,
// Go's linux/386 port among them, get no sockets at all.
//
// With arguments:
//
//   - clone and unshare fail when flags include CLONE_NEWUSER (B7). Flags
//     are the first argument of clone on x86_64, i386, aarch64 and arm alike.
//   - ioctl fails for TIOCSTI and TIOCLINUX (D1, D2).
//   - mknod and mknodat fail for character and block devices (B6); FIFOs,
//     sockets and regular files stay allowed.
//   - personality only accepts PER_LINUX, PER_LINUX32, their UNAME26 variants
//     and the 0xffffffff query, the set Docker allows; flags such as
//     READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE weaken exploit mitigations.
//   - socket is an allow list of families, because rarely used families
//     (AF_PACKET, AF_VSOCK, AF_ALG, AF_TIPC, AF_RDS, ...) are where the
//     kernel bugs are (C7): AF_INET, AF_INET6, AF_NETLINK with protocol
//     NETLINK_ROUTE only (getifaddrs, Go's net.Interfaces; uevent, audit,
//     generic and sock_diag netlink are refused), and AF_UNIX only with
//     [Config.AllowUnix] (C1).
//   - socketpair is allowed: a connected pair reaches no one else, and connect
//     on a connected stream or seqpacket socket fails with EISCONN. The
//     exception is AF_UNIX SOCK_DGRAM without AllowUnix, because a datagram
//     socket can sendto or reconnect to any named socket it can see.
//   - With [Config.DenyInet], AF_INET and AF_INET6 sockets must be
//     SOCK_STREAM with protocol 0 or IPPROTO_TCP, the only traffic Landlock
//     can confine: UDP, raw, SCTP and MPTCP sockets are refused. sendto,
//     sendmsg and sendmmsg with MSG_FASTOPEN are refused too, because a TCP
//     Fast Open send connects without the connect hook Landlock relies on
//     (landlock-lsm/linux#41).
//
// Syscalls whose answer does not depend on arguments never read them, so the
// kernel's seccomp action cache (Linux 5.11+) skips the filter for them.
package seccomp
