//go:build linux

package escape_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	sandboxtest.Cleanup()
	os.Exit(code)
}

var backends = []string{"bwrap", "landlock"}

// row is one attack. want is the probe's expected output under each
// backend ("" for the bwrap value); neighbour, when set, is the legitimate
// operation next to it that must keep working.
type row struct {
	id, name  string
	op        []string
	bwrap     string
	landlock  string
	neighbour []string
	nwant     string // expected neighbour output, default "ok"
	setup     func(t *testing.T, e *sandboxtest.Env) map[string]string
	flags     []string
}

func sys(nr uintptr, args ...uint64) []string {
	op := []string{"syscall", fmt.Sprint(nr)}
	for _, a := range args {
		op = append(op, fmt.Sprint(a))
	}
	return op
}

func rows(e *sandboxtest.Env) []row {
	w := func(p string) string { return filepath.Join(e.Work, p) }
	h := func(p string) string { return filepath.Join(e.Home, p) }
	return []row{
		// A. Deferred execution on the host.
		{id: "A1", name: "plant .git/hooks/pre-commit", op: []string{"write", w(".git/hooks/pre-commit")}, bwrap: "err EROFS", landlock: "err EACCES", neighbour: []string{"write", w("README")}},
		{id: "A1", name: "replace the hooks dir", op: []string{"remove", w(".git/hooks")}, bwrap: "err EBUSY", landlock: "err EACCES", neighbour: []string{"ls", w(".git/hooks")}},
		{id: "A2", name: "poison .git/config", op: []string{"append", w(".git/config")}, bwrap: "err EROFS", landlock: "err EACCES", neighbour: []string{"read", w(".git/config")}, nwant: "ok [core]"},
		{id: "A2", name: "swap .git/config by rename", op: []string{"rename", w("README"), w(".git/config")}, bwrap: "err EXDEV", landlock: "err EACCES", neighbour: []string{"read", w("README")}, nwant: "ok hello"},
		{id: "A3", name: "plant hooks in a worktree's real gitdir", setup: worktree, op: []string{"write", filepath.Join(filepath.Dir(e.Work), "main", ".git", "hooks", "post-checkout")}, bwrap: "err EROFS", landlock: "err EACCES", neighbour: []string{"write", w("sub/wt-file")}},
		{id: "A3", name: "repoint the worktree's gitfile", setup: worktree, op: []string{"write", w(".git"), "gitdir: /tmp/evil"}, bwrap: "err EROFS", landlock: "err EACCES"},
		{id: "A3", name: "git init a repository where there is none", setup: noRepo, op: []string{"mkdirall", w(".git/hooks")}, bwrap: "err EROFS", landlock: "err EACCES", neighbour: []string{"write", w("sub/notes.txt")}},
		{id: "A4", name: "write ~/.bashrc when $HOME is the workdir", setup: homeIsWorkdir, op: []string{"append", h(".bashrc")}, bwrap: "err EACCES", landlock: "err EACCES", neighbour: []string{"write", h("src/notes.txt")}},
		{id: "A4", name: "create ~/.zshrc when $HOME is the workdir", setup: homeIsWorkdir, op: []string{"write", h(".zshrc")}, bwrap: "err EROFS", landlock: "err EACCES"},
		{id: "A5", name: "create .claude/settings.json", op: []string{"write", w(".claude/settings.json")}, bwrap: "err EROFS", landlock: "err ENOENT"},
		{id: "A5", name: "mkdir .claude", op: []string{"mkdir", w(".claude")}, bwrap: "err EEXIST", landlock: "err EACCES"},
		{id: "A5", name: "create .mcp.json", op: []string{"write", w(".mcp.json")}, bwrap: "err EROFS", landlock: "err EACCES"},
		{id: "A5", name: "create .codex/config.toml", op: []string{"write", w(".codex/config.toml")}, bwrap: "err EROFS", landlock: "err ENOENT"},
		{id: "A5", name: "mkdir .codex", op: []string{"mkdir", w(".codex")}, bwrap: "err EEXIST", landlock: "err EACCES"},
		{id: "A5", name: "create .gemini/settings.json", op: []string{"write", w(".gemini/settings.json")}, bwrap: "err EROFS", landlock: "err ENOENT"},
		{id: "A5", name: "mkdir .gemini", op: []string{"mkdir", w(".gemini")}, bwrap: "err EEXIST", landlock: "err EACCES"},
		{id: "A5", name: "create .agents/skills/x", op: []string{"mkdirall", w(".agents/skills/x")}, bwrap: "err EROFS", landlock: "err EACCES"},
		{id: "A5", name: "create .opencode/plugins/x.ts", op: []string{"mkdirall", w(".opencode/plugins")}, bwrap: "err EROFS", landlock: "err EACCES"},
		{id: "A6", name: "write ~/.gitconfig when $HOME is the workdir", setup: homeIsWorkdir, op: []string{"append", h(".gitconfig")}, bwrap: "err EACCES", landlock: "err EACCES"},
		{id: "A6", name: "write ~/.ssh/config", setup: homeIsWorkdir, op: []string{"write", h(".ssh/config")}, bwrap: "err EACCES", landlock: "err EACCES"},
		{id: "A7", name: "create .vscode/tasks.json", op: []string{"write", w(".vscode/tasks.json")}, bwrap: "err EROFS", landlock: "err ENOENT"},
		{id: "A5", name: "mkdir .vscode", op: []string{"mkdir", w(".vscode")}, bwrap: "err EEXIST", landlock: "err EACCES"},
		{id: "A7", name: "create .idea/workspace.xml", op: []string{"write", w(".idea/workspace.xml")}, bwrap: "err EROFS", landlock: "err ENOENT"},
		{id: "A5", name: "mkdir .idea", op: []string{"mkdir", w(".idea")}, bwrap: "err EEXIST", landlock: "err EACCES"},
		{id: "A7", name: "create .envrc", op: []string{"write", w(".envrc")}, bwrap: "err EROFS", landlock: "err EACCES"},
		{id: "A7", name: "modify an existing mise.toml", setup: miseToml, op: []string{"append", w("mise.toml")}, bwrap: "err EROFS", landlock: "err EACCES", neighbour: []string{"read", w("mise.toml")}, nwant: "ok [tools]"},
		{id: "A9", name: "rename .git away", op: []string{"rename", w(".git"), w("g")}, bwrap: "err EBUSY", landlock: "err EACCES", neighbour: []string{"rename", w("sub/a"), w("sub/b")}},
		{id: "A9", name: "rename .git/hooks away", op: []string{"rename", w(".git/hooks"), w(".git/h")}, bwrap: "err EBUSY", landlock: "err EACCES"},
		{id: "A11", name: "hardlink a protected file", op: []string{"link", w(".git/config"), w("cfg")}, bwrap: "err EXDEV", landlock: "err EACCES"},
		// B. Filesystem and process view.
		{id: "B1", name: "write through a symlink to /etc", op: []string{"write", w("sub/etc-link/warden-x")}, setup: symlinkOut, bwrap: "err EROFS", landlock: "err EACCES", neighbour: []string{"write", w("sub/ok")}},
		{id: "B3", name: "read the host's root through /proc/1/root", op: []string{"read", "/proc/1/root" + h(".ssh/id_ed25519")}, bwrap: "err ENOENT", landlock: "err EACCES"},
		{id: "B3", name: "PID 1's environment holds nothing of the host's", op: []string{"read", "/proc/1/environ"}, bwrap: "ok PWD=", landlock: "err EACCES"},
		{id: "B4", name: "/proc/self/root aliasing to a secret", op: []string{"read", "/proc/self/root" + h(".aws/credentials")}, bwrap: "err ENOENT", landlock: "err EACCES"},
		{id: "B6", name: "mknod a device", op: []string{"mknod", w("sub/null")}, bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "B7", name: "unshare a nested user namespace", op: sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "B8", name: "write a sibling project's .env", op: []string{"write", filepath.Join(filepath.Dir(e.Work), "other", ".env")}, setup: sibling, bwrap: "err ENOENT", landlock: "err EACCES"},
		{id: "B2", name: "read the workdir's masked .env", op: []string{"read", w(".env")}, bwrap: "err EACCES", landlock: "err EACCES", neighbour: []string{"read", w(".gitignore")}, nwant: "ok"},
		{id: "B9", name: "read ~/.ssh/id_ed25519", op: []string{"read", h(".ssh/id_ed25519")}, bwrap: "err ENOENT", landlock: "err EACCES"},
		// C. IPC and local services.
		{id: "C1", name: "create a Unix socket (docker.sock and co)", op: []string{"socket", fmt.Sprint(unix.AF_UNIX), fmt.Sprint(unix.SOCK_STREAM)}, bwrap: "err EPERM", landlock: "err EPERM", neighbour: []string{"socket", fmt.Sprint(unix.AF_UNIX), fmt.Sprint(unix.SOCK_STREAM)}, flags: nil},
		{id: "C2", name: "D-Bus session address stripped", op: []string{"env", "DBUS_SESSION_BUS_ADDRESS"}, bwrap: "err ENOENT", landlock: "err ENOENT"},
		{id: "C3", name: "ssh-agent socket stripped", op: []string{"env", "SSH_AUTH_SOCK"}, bwrap: "err ENOENT", landlock: "err ENOENT"},
		{id: "C4", name: "connect to a host abstract Unix socket", op: []string{"abstract", "warden-escape-test"}, setup: abstractListener, bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C5", name: "io_uring_setup", op: sys(unix.SYS_IO_URING_SETUP, 8, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C5", name: "a syscall through the x32 ABI", op: sys(unix.SYS_GETPID | 0x40000000), bwrap: "err ENOSYS", landlock: "err ENOSYS", neighbour: sys(unix.SYS_GETPID)},
		{id: "C7", name: "AF_VSOCK socket", op: []string{"socket", "40", fmt.Sprint(unix.SOCK_STREAM)}, bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C7", name: "AF_PACKET socket", op: []string{"socket", fmt.Sprint(unix.AF_PACKET), fmt.Sprint(unix.SOCK_RAW)}, bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C8", name: "ptrace(PTRACE_TRACEME)", op: sys(unix.SYS_PTRACE, unix.PTRACE_TRACEME), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C8", name: "process_vm_readv", op: sys(unix.SYS_PROCESS_VM_READV, 1), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C8", name: "pidfd_getfd", op: sys(unix.SYS_PIDFD_GETFD, 0, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C9", name: "SIGSTOP a host process", op: []string{"kill", "HOSTPID", "19"}, setup: hostProcess, bwrap: "err ESRCH", landlock: "err EPERM"},
		{id: "C10", name: "attach to a host SysV shared memory segment", op: []string{"shm", "HOSTSHM"}, setup: hostShm, bwrap: "err ENOENT", landlock: "err EPERM"},
		{id: "C", name: "bpf()", op: sys(unix.SYS_BPF, 0, 0, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C", name: "keyctl (kernel keyrings)", op: sys(unix.SYS_KEYCTL, 0, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C", name: "perf_event_open", op: sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C", name: "mount a tmpfs", op: sys(unix.SYS_MOUNT, 0, 0, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C", name: "setns into PID 1's namespaces", op: sys(unix.SYS_SETNS, 0, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "C", name: "open_by_handle_at", op: sys(unix.SYS_OPEN_BY_HANDLE_AT, 0, 0, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		// D. Terminal.
		{id: "D1", name: "TIOCSTI keystroke injection", op: sys(unix.SYS_IOCTL, 0, unix.TIOCSTI, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "D2", name: "TIOCSTI with high bits set (CVE-2019-10063)", op: sys(unix.SYS_IOCTL, 0, unix.TIOCSTI|1<<32, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		{id: "D2", name: "TIOCLINUX", op: sys(unix.SYS_IOCTL, 0, unix.TIOCLINUX, 0), bwrap: "err EPERM", landlock: "err EPERM"},
		// E (the no-network part) and F.
		{id: "E1", name: "raw TCP to an IP, ignoring proxies", op: []string{"tcp", "192.0.2.1:443"}, bwrap: "err ENETUNREACH", landlock: "err EACCES"},
		{id: "E9", name: "UDP datagram (DNS exfiltration)", op: []string{"udp", "192.0.2.1:53"}, bwrap: "err ENETUNREACH", landlock: "err EPERM"},
		{id: "F5", name: "a planted project policy is not loaded", setup: plantProjectPolicy, op: []string{"tcp", "192.0.2.1:443"}, bwrap: "err ENETUNREACH", landlock: "err EACCES"},
		{id: "F7", name: "host secret in the environment", op: []string{"env", "AWS_SECRET_ACCESS_KEY"}, bwrap: "err ENOENT", landlock: "err ENOENT", neighbour: []string{"env", "LANG"}, nwant: "ok C.UTF-8"},
		{id: "F7", name: "loader hook in the environment", op: []string{"env", "LD_PRELOAD"}, bwrap: "err ENOENT", landlock: "err ENOENT"},
	}
}

func TestEscape(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			probeEnv := sandboxtest.NewEnv(t)
			n := 0
			for _, r := range rows(probeEnv) {
				n++
				t.Run(r.id+" "+r.name, func(t *testing.T) {
					t.Parallel()
					e := sandboxtest.NewEnv(t)
					for _, d := range []string{"sub"} {
						if err := os.MkdirAll(filepath.Join(e.Work, d), 0o755); err != nil {
							t.Fatal(err)
						}
					}
					if err := os.WriteFile(filepath.Join(e.Work, "sub", "a"), []byte("a"), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(e.Work, ".gitignore"), nil, 0o644); err != nil {
						t.Fatal(err)
					}
					// Rows are written against a fresh Env's paths: rebuild them.
					var rr row
					for _, x := range rows(e) {
						if x.id == r.id && x.name == r.name {
							rr = x
						}
					}
					flags := append([]string{"--backend", backend}, rr.flags...)
					var vars map[string]string
					if rr.setup != nil {
						vars = rr.setup(t, e)
					}
					op := subst(rr.op, vars)
					want := rr.bwrap
					if backend == "landlock" && rr.landlock != "" {
						want = rr.landlock
					}
					got := e.ProbeRun(flags, op[0], op[1:]...)
					if s := strings.TrimSpace(got.Stdout); !matches(s, want) {
						t.Errorf("%s: got %q, want %q\n%s", strings.Join(op, " "), s, want, got)
					}
					if rr.neighbour != nil {
						nwant := rr.nwant
						if nwant == "" {
							nwant = "ok"
						}
						if rr.id == "C1" { // no Unix sockets at all, under either backend
							nwant = "err EPERM"
						}
						ng := e.ProbeRun(flags, rr.neighbour[0], rr.neighbour[1:]...)
						if s := strings.TrimSpace(ng.Stdout); s != nwant && !strings.HasPrefix(s, nwant) {
							t.Errorf("neighbour %v: got %q, want %q\n%s", rr.neighbour, s, nwant, ng)
						}
					}
				})
			}
			if n < 40 {
				t.Errorf("only %d rows; the suite needs at least 40", n)
			}
		})
	}
}

func subst(op []string, vars map[string]string) []string {
	out := append([]string(nil), op...)
	for i, a := range out {
		if v, ok := vars[a]; ok {
			out[i] = v
		}
	}
	return out
}

// Setups.

func worktree(t *testing.T, e *sandboxtest.Env) map[string]string {
	main := filepath.Join(filepath.Dir(e.Work), "main")
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + e.Home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(main, "init", "-q", "-b", "main")
	run(main, "commit", "-q", "--allow-empty", "-m", "init")
	if err := os.RemoveAll(e.Work); err != nil {
		t.Fatal(err)
	}
	run(main, "worktree", "add", "-q", e.Work)
	if err := os.Mkdir(filepath.Join(e.Work, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return nil
}

func noRepo(t *testing.T, e *sandboxtest.Env) map[string]string {
	if err := os.RemoveAll(filepath.Join(e.Work, ".git")); err != nil {
		t.Fatal(err)
	}
	return nil
}

func homeIsWorkdir(t *testing.T, e *sandboxtest.Env) map[string]string {
	// The workdir becomes $HOME itself.
	e.Work = e.Home
	return nil
}

func symlinkOut(t *testing.T, e *sandboxtest.Env) map[string]string {
	if err := os.Symlink("/etc", filepath.Join(e.Work, "sub", "etc-link")); err != nil {
		t.Fatal(err)
	}
	return nil
}

func sibling(t *testing.T, e *sandboxtest.Env) map[string]string {
	if err := os.MkdirAll(filepath.Join(filepath.Dir(e.Work), "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	return nil
}

func plantProjectPolicy(t *testing.T, e *sandboxtest.Env) map[string]string {
	for _, p := range []string{".warden/policy.yaml", "warden.yaml", ".warden.yaml"} {
		full := filepath.Join(e.Work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("version: 1\nnetwork: {mode: open}\nmode: rwx\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return nil
}

func abstractListener(t *testing.T, e *sandboxtest.Env) map[string]string {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@warden-escape-test-" + fmt.Sprint(os.Getpid())}); err != nil {
		t.Skipf("abstract socket: %v", err)
	}
	_ = unix.Listen(fd, 1)
	return nil
}

func hostProcess(t *testing.T, e *sandboxtest.Env) map[string]string {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return map[string]string{"HOSTPID": fmt.Sprint(cmd.Process.Pid)}
}

func hostShm(t *testing.T, e *sandboxtest.Env) map[string]string {
	key := 0x5a000000 + os.Getpid()%0xffff
	id, _, errno := syscall.RawSyscall(syscall.SYS_SHMGET, uintptr(key), 4096, uintptr(unix.IPC_CREAT|0o600))
	if errno != 0 {
		t.Skipf("shmget: %v", errno)
	}
	t.Cleanup(func() { _, _, _ = syscall.RawSyscall(syscall.SYS_SHMCTL, id, unix.IPC_RMID, 0) })
	return map[string]string{"HOSTSHM": fmt.Sprint(key)}
}

func miseToml(t *testing.T, e *sandboxtest.Env) map[string]string {
	if err := os.WriteFile(filepath.Join(e.Work, "mise.toml"), []byte("[tools]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return nil
}

// matches reports whether the probe's output s is want: the same, or want
// followed by a detail (after a space, or directly when want ends in "=").
func matches(s, want string) bool {
	return s == want || strings.HasPrefix(s, want+" ") || strings.HasSuffix(want, "=") && strings.HasPrefix(s, want)
}

// TestOrphansDoNotOutliveTheSession is threat F8: a daemon that double-forks
// out of the target's session ends with the sandbox, under both backends.
func TestOrphansDoNotOutliveTheSession(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := sandboxtest.NewEnv(t)
			marker := fmt.Sprintf("%d.%s", os.Getpid(), backend)
			r := e.Run([]string{"--backend", backend}, "sh", "-c", "setsid sh -c 'exec -a warden-orphan-"+marker+" sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.2; echo started")
			if !strings.Contains(r.Stdout, "started") {
				t.Fatalf("%s", r)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				out, _ := exec.Command("pgrep", "-f", "warden-orphan-"+marker).Output()
				if len(strings.TrimSpace(string(out))) == 0 {
					return
				}
				if time.Now().After(deadline) {
					_ = exec.Command("pkill", "-f", "warden-orphan-"+marker).Run()
					t.Fatalf("a daemon outlived the %s sandbox: pids %s", backend, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
