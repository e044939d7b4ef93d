//go:build linux

package bwrap_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	sandboxtest.Cleanup()
	os.Exit(code)
}

type env = sandboxtest.Env

func newEnv(t *testing.T) *env { return sandboxtest.NewEnv(t) }

func newEnvOutsideTmp(t *testing.T) *env { return sandboxtest.NewEnvOutsideTmp(t) }

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		argv []string
		want int
	}{
		{"true", []string{"true"}, 0},
		{"exit 42", []string{"sh", "-c", "exit 42"}, 42},
		{"not found", []string{"no-such-command-warden"}, 127},
		{"not executable", []string{"/etc/passwd"}, 126},
		{"killed by signal", []string{"sh", "-c", "kill -9 $$"}, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.Run(nil, tc.argv...); r.Code != tc.want {
				t.Errorf("exit %d, want %d\n%s", r.Code, tc.want, r)
			}
		})
	}
}

func TestRunPolicyErrorIs125(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nwrite_paths: [~/.ssh]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.Run([]string{"--policy", bad}, "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "write_paths") || !strings.Contains(r.Stderr, "deny wins") {
		t.Errorf("want 125 naming write_paths\n%s", r)
	}
}

// TestRunFilesystem attacks the filesystem view: each row asserts the
// specific failure, and the rows marked neighbour assert what must work.
func TestRunFilesystem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := func(p string) string { return filepath.Join(e.Work, p) }
	h := func(p string) string { return filepath.Join(e.Home, p) }
	tests := []struct {
		name string
		op   []string
		want string
	}{
		{"neighbour: write in workdir", []string{"write", w("out.txt")}, "ok"},
		{"neighbour: read workdir", []string{"read", w("README")}, "ok hello"},
		{"neighbour: write private tmp", []string{"write", "/tmp/x"}, "ok"},
		{"write /etc", []string{"write", "/etc/warden-probe"}, "err EROFS"},
		{"write /usr", []string{"write", "/usr/warden-probe"}, "err EROFS"},
		{"read ssh key", []string{"read", h(".ssh/id_ed25519")}, "err ENOENT"},
		{"read aws credentials", []string{"read", h(".aws/credentials")}, "err ENOENT"},
		{"read /etc/shadow", []string{"read", "/etc/shadow"}, "err EACCES"},
		{"read masked .env", []string{"read", w(".env")}, "err EACCES"},
		{"create .git/hooks/pre-commit", []string{"write", w(".git/hooks/pre-commit")}, "err EROFS"},
		{"modify .git/config", []string{"append", w(".git/config")}, "err EROFS"},
		{"create .claude/settings.json", []string{"write", w(".claude/settings.json")}, "err EROFS"},
		{"create .mcp.json", []string{"write", w(".mcp.json")}, "err EROFS"},
		{"create .vscode/tasks.json", []string{"write", w(".vscode/tasks.json")}, "err EROFS"},
		{"create .envrc", []string{"write", w(".envrc")}, "err EROFS"},
		{"rename .git away", []string{"rename", w(".git"), w("g")}, "err EBUSY"},
		{"rename hooks away", []string{"rename", w(".git/hooks"), w(".git/h")}, "err EBUSY"},
		{"remove .git/config", []string{"remove", w(".git/config")}, "err EBUSY"},
		{"symlink out of workdir", []string{"symlink", "/etc/passwd", w("l")}, "ok"},
		{"mknod", []string{"mknod", w("null")}, "err EPERM"},
		{"host /tmp is not shared", []string{"ls", "/tmp"}, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.Expect(e.ProbeRun(nil, tc.op[0], tc.op[1:]...), tc.want)
		})
	}
	// Writes to $HOME land in a throw-away tmpfs, never on the host.
	e.Expect(e.ProbeRun(nil, "write", h("planted")), "ok")
	if _, err := os.Stat(h("planted")); err == nil {
		t.Error("a write to $HOME reached the host")
	}
	// Placeholders for missing protected paths are gone after the run.
	for _, p := range []string{".claude", ".mcp.json", ".vscode", ".envrc"} {
		if _, err := os.Lstat(w(p)); err == nil {
			t.Errorf("placeholder %s left behind", p)
		}
	}
	if _, err := os.Stat(w("out.txt")); err != nil {
		t.Errorf("workdir write did not reach the host: %v", err)
	}
}

func TestRunGitCommitWorks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.Run(nil, "sh", "-c", `git add README && git -c user.name=w -c user.email=w@x commit -qm "in sandbox" && git log --oneline | wc -l`)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "1" {
		t.Fatalf("git commit inside the sandbox failed\n%s", r)
	}
	r = e.Run(nil, "sh", "-c", `printf '#!/bin/sh\necho pwned\n' > .git/hooks/post-commit`)
	if r.Code == 0 {
		t.Fatal("hook planted")
	}
}

func TestRunNetworkBlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	e.Expect(e.ProbeRun(nil, "tcp", l.Addr().String()), "err ECONNREFUSED") // host loopback is not ours
	e.Expect(e.ProbeRun(nil, "tcp", "192.0.2.1:80"), "err ENETUNREACH")
	e.Expect(e.ProbeRun(nil, "udp", "192.0.2.1:53"), "err ENETUNREACH")
	e.Expect(e.ProbeRun(nil, "resolve", "example.com"), "err")
	// The neighbour: loopback inside the sandbox's own namespace works.
	r := e.Run(nil, "sh", "-c", e.Probe+" tcp 127.0.0.1:9 ; true")
	if !strings.Contains(r.Stdout, "ECONNREFUSED") {
		t.Errorf("sandbox loopback: %s", r)
	}
}

func TestRunEnvironment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Expect(e.ProbeRun(nil, "env", "AWS_SECRET_ACCESS_KEY"), "err ENOENT")
	e.Expect(e.ProbeRun(nil, "env", "LD_PRELOAD"), "err ENOENT")
	e.Expect(e.ProbeRun([]string{"--env", "AWS_*"}, "env", "AWS_SECRET_ACCESS_KEY"), "ok hunter2")
	e.Expect(e.ProbeRun([]string{"--env", "LD_PRELOAD"}, "env", "LD_PRELOAD"), "err ENOENT")
	e.Expect(e.ProbeRun(nil, "env", "TMPDIR"), "ok /tmp")
	e.Expect(e.ProbeRun(nil, "env", "HOME"), "ok "+e.Home)
}

func TestRunFDsClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f, err := os.Open(e.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(e.Warden, "run", "--allow-read", filepath.Dir(e.Probe), "--", e.Probe, "fds")
	cmd.Dir = e.Work
	cmd.Env = e.Environ()
	cmd.ExtraFiles = []*os.File{f, f, f} // fds 3, 4, 5 leak into warden
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// 0-2 plus the directory the probe itself opened to list /proc/self/fd.
	if got := strings.TrimSpace(string(out)); got != "ok 0,1,2,3" {
		t.Errorf("inherited fds reached the target: %s", got)
	}
}

func TestRunSignalsReachTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := exec.Command(e.Warden, "run", "--", "sh", "-c", `trap 'exit 77' TERM; echo ready; while :; do sleep 0.05; done`)
	cmd.Dir = e.Work
	cmd.Env = e.Environ()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("SIGTERM did not end the sandboxed command")
	}
	if code := cmd.ProcessState.ExitCode(); code != 77 {
		t.Errorf("exit %d, want 77 from the target's TERM trap", code)
	}
}

func TestRunPIDNamespaceAndHostname(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.Run(nil, "sh", "-c", "ls /proc | grep -c '^[0-9]' ; hostname")
	lines := strings.Fields(r.Stdout)
	if r.Code != 0 || len(lines) != 2 || lines[1] != "warden" {
		t.Fatalf("unexpected\n%s", r)
	}
	// PID 1 (warden's child), the shell, ls and grep; never the host's.
	if n := lines[0]; n > "6" || len(n) > 1 {
		t.Errorf("%s processes visible", n)
	}
}

func TestRunExplainRunsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.Run([]string{"--explain"}, "sh", "-c", "touch "+filepath.Join(e.Work, "ran"))
	if r.Code != 0 || !strings.Contains(r.Stdout, "--unshare-net") || !strings.Contains(r.Stdout, "\"workdir\"") {
		t.Fatalf("explain output\n%s", r)
	}
	if strings.Contains(r.Stdout, "hunter2") {
		t.Error("explain printed a host secret")
	}
	if _, err := os.Stat(filepath.Join(e.Work, "ran")); err == nil {
		t.Error("--explain ran the command")
	}
}

func TestRunModes(t *testing.T) {
	t.Parallel()
	e := newEnvOutsideTmp(t)
	// rx: the rest of the filesystem is readable, secrets are not, writes
	// stay confined.
	e.Expect(e.ProbeRun([]string{"--mode", "rx"}, "read", filepath.Join(e.Home, ".gitconfig")), "ok")
	e.Expect(e.ProbeRun([]string{"--mode", "rx"}, "read", filepath.Join(e.Home, ".ssh", "id_ed25519")), "err EACCES")
	e.Expect(e.ProbeRun([]string{"--mode", "rx"}, "write", filepath.Join(e.Home, "x")), "err EROFS")
	e.Expect(e.ProbeRun([]string{"--mode", "rx"}, "write", filepath.Join(e.Work, "x")), "ok")
	// rwx: loud.
	r := e.Run([]string{"--mode", "rwx"}, "true")
	if r.Code != 0 || !strings.Contains(r.Stderr, "MODE RWX") {
		t.Errorf("rwx must warn loudly\n%s", r)
	}
}

func TestRunStartInScratch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pol := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nstart_in_scratch: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.Run([]string{"--policy", pol}, "sh", "-c", "pwd; echo x > here && cat "+filepath.Join(e.Work, "README")+" && echo y > "+filepath.Join(e.Work, "nope"))
	if !strings.HasPrefix(r.Stdout, "/scratch\nhello\n") || r.Code == 0 {
		t.Errorf("scratch\n%s", r)
	}
}

// TestRunUnixSockets: Unix sockets are refused unless the policy names one
// (threat C1), and then only that one is reachable.
func TestRunUnixSockets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	allowed, other := filepath.Join(dir, "allowed.sock"), filepath.Join(dir, "other.sock")
	for _, p := range []string{allowed, other} {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	e.Expect(e.ProbeRun(nil, "unix", allowed), "err EPERM")
	pol := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nunix_sockets: ["+allowed+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Expect(e.ProbeRun([]string{"--policy", pol}, "unix", allowed), "ok")
	e.Expect(e.ProbeRun([]string{"--policy", pol}, "unix", other), "err ENOENT")
	r := e.Run([]string{"--policy", pol, "--backend", "landlock"}, "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "unix_sockets") {
		t.Errorf("landlock backend must refuse unix_sockets\n%s", r)
	}
}

// TestRunLimits: the policy's limits are the target's rlimits.
func TestRunLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pol := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nlimits: {open_files: 64, file_size: 1M, cpu_seconds: 30}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		r := e.Run([]string{"--policy", pol, "--backend", backend}, "sh", "-c", "ulimit -n; ulimit -f; ulimit -t; head -c 2000000 /dev/zero > \"$TMPDIR/big\"; echo $?; wc -c < \"$TMPDIR/big\"")
		if got := strings.Fields(r.Stdout); len(got) < 5 || got[0] != "64" || got[1] != "2048" || got[2] != "30" || got[3] == "0" || got[4] != "1048576" {
			t.Errorf("%s: limits not applied: %q\n%s", backend, got, r)
		}
	}
}
