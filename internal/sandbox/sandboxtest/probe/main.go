// Command probe performs one operation inside a sandbox and reports the
// outcome as "ok [detail]" or "err <ERRNO>", so tests can assert the exact
// failure. Exit status: 0 ok, 1 the operation failed, 2 usage.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe OP [ARGS]")
		os.Exit(2)
	}
	detail, err := run(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Println("err " + errnoName(err))
		os.Exit(1)
	}
	if detail != "" {
		fmt.Println("ok " + detail)
	} else {
		fmt.Println("ok")
	}
}

func arg(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	fmt.Fprintln(os.Stderr, "probe: missing argument")
	os.Exit(2)
	return ""
}

func run(op string, a []string) (string, error) {
	switch op {
	case "read":
		b, err := os.ReadFile(arg(a, 0))
		return strings.TrimSpace(string(b)), err
	case "write": // write PATH [CONTENT]: create or truncate
		content := "probe"
		if len(a) > 1 {
			content = a[1]
		}
		return "", os.WriteFile(arg(a, 0), []byte(content), 0o644)
	case "append":
		f, err := os.OpenFile(arg(a, 0), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString("probe\n")
		return "", err
	case "mkdir":
		return "", os.Mkdir(arg(a, 0), 0o755)
	case "mkdirall":
		return "", os.MkdirAll(arg(a, 0), 0o755)
	case "rename":
		return "", os.Rename(arg(a, 0), arg(a, 1))
	case "remove":
		return "", os.Remove(arg(a, 0))
	case "symlink":
		return "", os.Symlink(arg(a, 0), arg(a, 1))
	case "link":
		return "", os.Link(arg(a, 0), arg(a, 1))
	case "chmod":
		return "", os.Chmod(arg(a, 0), 0o777)
	case "ls":
		ents, err := os.ReadDir(arg(a, 0))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return strings.Join(names, ","), err
	case "exists":
		_, err := os.Lstat(arg(a, 0))
		return "", err
	case "tcp":
		c, err := net.DialTimeout("tcp", arg(a, 0), 3*time.Second)
		if err == nil {
			c.Close()
		}
		return "", err
	case "udp": // send one datagram
		c, err := net.Dial("udp", arg(a, 0))
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, err = c.Write([]byte("probe"))
		return "", err
	case "unix":
		c, err := net.DialTimeout("unix", arg(a, 0), 3*time.Second)
		if err == nil {
			c.Close()
		}
		return "", err
	case "resolve":
		addrs, err := net.LookupHost(arg(a, 0))
		return strings.Join(addrs, ","), err
	case "env":
		v, ok := os.LookupEnv(arg(a, 0))
		if !ok {
			return "", syscall.ENOENT
		}
		return v, nil
	case "environ":
		env := os.Environ()
		sort.Strings(env)
		return strings.Join(env, "\n"), nil
	case "fds":
		ents, err := os.ReadDir("/proc/self/fd")
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		return strings.Join(names, ","), err
	case "pid":
		return fmt.Sprint(os.Getpid()), nil
	case "kill": // kill PID SIGNUM
		var pid, sig int
		fmt.Sscan(arg(a, 0), &pid)
		fmt.Sscan(arg(a, 1), &sig)
		return "", syscall.Kill(pid, syscall.Signal(sig))
	case "mknod":
		return "", syscall.Mknod(arg(a, 0), syscall.S_IFCHR|0o666, int(mkdev(1, 3)))
	case "sleep": // sleep and report the signal that ends it
		d, _ := time.ParseDuration(arg(a, 0))
		time.Sleep(d)
		return "", nil
	case "abstract": // connect to an abstract unix socket @NAME
		c, err := net.DialTimeout("unix", "@"+arg(a, 0), 3*time.Second)
		if err == nil {
			c.Close()
		}
		return "", err
	case "socket": // socket DOMAIN TYPE: create and close
		var dom, typ int
		fmt.Sscan(arg(a, 0), &dom)
		fmt.Sscan(arg(a, 1), &typ)
		fd, err := syscall.Socket(dom, typ, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return "", err
	case "syscall": // syscall NR [ARG0 [ARG1 [ARG2]]]: raw, report errno
		var nr, a0, a1, a2 uint64
		fmt.Sscan(arg(a, 0), &nr)
		if len(a) > 1 {
			fmt.Sscan(a[1], &a0)
		}
		if len(a) > 2 {
			fmt.Sscan(a[2], &a1)
		}
		if len(a) > 3 {
			fmt.Sscan(a[3], &a2)
		}
		_, _, errno := syscall.RawSyscall(uintptr(nr), uintptr(a0), uintptr(a1), uintptr(a2))
		if errno != 0 {
			return "", errno
		}
		return "", nil
	case "shm": // shmget KEY 0: attach to an existing SysV segment
		var key int
		fmt.Sscan(arg(a, 0), &key)
		_, _, errno := syscall.RawSyscall(syscall.SYS_SHMGET, uintptr(key), 0, 0)
		if errno != 0 {
			return "", errno
		}
		return "", nil
	case "exit":
		var n int
		fmt.Sscan(arg(a, 0), &n)
		os.Exit(n)
	}
	fmt.Fprintf(os.Stderr, "probe: unknown op %q\n", op)
	os.Exit(2)
	return "", nil
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}

func errnoName(err error) string {
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		if n, ok := names[errno]; ok {
			return n
		}
		return fmt.Sprintf("errno%d", int(errno))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "ETIMEDOUT"
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return "DNS"
	}
	return "OTHER:" + err.Error()
}

var names = map[syscall.Errno]string{
	syscall.EPERM: "EPERM", syscall.ENOENT: "ENOENT", syscall.EACCES: "EACCES", syscall.EEXIST: "EEXIST",
	syscall.EROFS: "EROFS", syscall.EBUSY: "EBUSY", syscall.ENOTDIR: "ENOTDIR", syscall.EISDIR: "EISDIR",
	syscall.ECONNREFUSED: "ECONNREFUSED", syscall.ENETUNREACH: "ENETUNREACH", syscall.EHOSTUNREACH: "EHOSTUNREACH",
	syscall.EXDEV: "EXDEV", syscall.ENOTEMPTY: "ENOTEMPTY", syscall.EINVAL: "EINVAL", syscall.ENOSYS: "ENOSYS",
	syscall.ESRCH: "ESRCH", syscall.EAFNOSUPPORT: "EAFNOSUPPORT", syscall.EADDRNOTAVAIL: "EADDRNOTAVAIL",
	syscall.ENOTSUP: "ENOTSUP",
}
