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

// env is one test's machine: a fake $HOME with secrets and a git
// repository as the workdir.
type env struct {
	t             *testing.T
	warden, probe string
	home, work    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir())
}

// newEnvOutsideTmp places the fake $HOME outside /tmp, which the sandbox
// replaces with a private tmpfs, as a real $HOME would be.
func newEnvOutsideTmp(t *testing.T) *env {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache dir: %v", err)
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp(cache, "warden-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	return newEnvIn(t, base)
}

func newEnvIn(t *testing.T, base string) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real sandbox")
	}
	sandboxtest.RequireUserNS(t)
	w, p := sandboxtest.Binaries(t)
	e := &env{t: t, warden: w, probe: p, home: filepath.Join(base, "home"), work: filepath.Join(base, "home", "src", "proj")}
	for _, d := range []string{filepath.Join(e.home, ".ssh"), filepath.Join(e.home, ".aws"), e.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		".ssh/id_ed25519": "PRIVATE KEY", ".aws/credentials": "AKIA", ".bashrc": "# rc", ".gitconfig": "[user]\n",
	} {
		if err := os.WriteFile(filepath.Join(e.home, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(e.work, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.work, ".env"), []byte("TOKEN=s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) git(args ...string) {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = e.work
	cmd.Env = []string{"HOME=" + e.home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (e *env) environ(extra ...string) []string {
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.home, "LANG=C.UTF-8", "XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config")}, extra...)
}

// run executes `warden run [flags] -- argv` in the workdir.
func (e *env) run(flags []string, argv ...string) sandboxtest.Result {
	e.t.Helper()
	args := append([]string{"run", "--allow-read", filepath.Dir(e.probe)}, flags...)
	args = append(append(args, "--"), argv...)
	return sandboxtest.Run(e.t, e.warden, sandboxtest.Cmd{Dir: e.work, Env: e.environ("AWS_SECRET_ACCESS_KEY=hunter2", "LD_PRELOAD=/nonexistent.so"), Args: args})
}

func (e *env) probeRun(flags []string, op string, args ...string) sandboxtest.Result {
	e.t.Helper()
	return e.run(flags, append([]string{e.probe, op}, args...)...)
}

func (e *env) expect(r sandboxtest.Result, want string) {
	e.t.Helper()
	if got := strings.TrimSpace(r.Stdout); !strings.HasPrefix(got, want) {
		e.t.Errorf("got %q, want %q\n%s", got, want, r)
	}
}

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
			if r := e.run(nil, tc.argv...); r.Code != tc.want {
				t.Errorf("exit %d, want %d\n%s", r.Code, tc.want, r)
			}
		})
	}
}

func TestRunPolicyErrorIs125(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nnetwork: {mode: filtered}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run([]string{"--policy", bad}, "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "network.mode") {
		t.Errorf("want 125 naming network.mode\n%s", r)
	}
}

// TestRunFilesystem attacks the filesystem view: each row asserts the
// specific failure, and the rows marked neighbour assert what must work.
func TestRunFilesystem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := func(p string) string { return filepath.Join(e.work, p) }
	h := func(p string) string { return filepath.Join(e.home, p) }
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
			e.expect(e.probeRun(nil, tc.op[0], tc.op[1:]...), tc.want)
		})
	}
	// Writes to $HOME land in a throw-away tmpfs, never on the host.
	e.expect(e.probeRun(nil, "write", h("planted")), "ok")
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
	r := e.run(nil, "sh", "-c", `git add README && git -c user.name=w -c user.email=w@x commit -qm "in sandbox" && git log --oneline | wc -l`)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "1" {
		t.Fatalf("git commit inside the sandbox failed\n%s", r)
	}
	r = e.run(nil, "sh", "-c", `printf '#!/bin/sh\necho pwned\n' > .git/hooks/post-commit`)
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
	e.expect(e.probeRun(nil, "tcp", l.Addr().String()), "err ECONNREFUSED") // host loopback is not ours
	e.expect(e.probeRun(nil, "tcp", "192.0.2.1:80"), "err ENETUNREACH")
	e.expect(e.probeRun(nil, "udp", "192.0.2.1:53"), "err ENETUNREACH")
	e.expect(e.probeRun(nil, "resolve", "example.com"), "err")
	// The neighbour: loopback inside the sandbox's own namespace works.
	r := e.run(nil, "sh", "-c", e.probe+" tcp 127.0.0.1:9 ; true")
	if !strings.Contains(r.Stdout, "ECONNREFUSED") {
		t.Errorf("sandbox loopback: %s", r)
	}
}

func TestRunEnvironment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(e.probeRun(nil, "env", "AWS_SECRET_ACCESS_KEY"), "err ENOENT")
	e.expect(e.probeRun(nil, "env", "LD_PRELOAD"), "err ENOENT")
	e.expect(e.probeRun([]string{"--env", "AWS_*"}, "env", "AWS_SECRET_ACCESS_KEY"), "ok hunter2")
	e.expect(e.probeRun([]string{"--env", "LD_PRELOAD"}, "env", "LD_PRELOAD"), "err ENOENT")
	e.expect(e.probeRun(nil, "env", "TMPDIR"), "ok /tmp")
	e.expect(e.probeRun(nil, "env", "HOME"), "ok "+e.home)
}

func TestRunFDsClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f, err := os.Open(e.home)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(e.warden, "run", "--allow-read", filepath.Dir(e.probe), "--", e.probe, "fds")
	cmd.Dir = e.work
	cmd.Env = e.environ()
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
	cmd := exec.Command(e.warden, "run", "--", "sh", "-c", `trap 'exit 77' TERM; echo ready; while :; do sleep 0.05; done`)
	cmd.Dir = e.work
	cmd.Env = e.environ()
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
	r := e.run(nil, "sh", "-c", "ls /proc | grep -c '^[0-9]' ; hostname")
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
	r := e.run([]string{"--explain"}, "sh", "-c", "touch "+filepath.Join(e.work, "ran"))
	if r.Code != 0 || !strings.Contains(r.Stdout, "--unshare-net") || !strings.Contains(r.Stdout, "\"workdir\"") {
		t.Fatalf("explain output\n%s", r)
	}
	if strings.Contains(r.Stdout, "hunter2") {
		t.Error("explain printed a host secret")
	}
	if _, err := os.Stat(filepath.Join(e.work, "ran")); err == nil {
		t.Error("--explain ran the command")
	}
}

func TestRunModes(t *testing.T) {
	t.Parallel()
	e := newEnvOutsideTmp(t)
	// rx: the rest of the filesystem is readable, secrets are not, writes
	// stay confined.
	e.expect(e.probeRun([]string{"--mode", "rx"}, "read", filepath.Join(e.home, ".gitconfig")), "ok")
	e.expect(e.probeRun([]string{"--mode", "rx"}, "read", filepath.Join(e.home, ".ssh", "id_ed25519")), "err EACCES")
	e.expect(e.probeRun([]string{"--mode", "rx"}, "write", filepath.Join(e.home, "x")), "err EROFS")
	e.expect(e.probeRun([]string{"--mode", "rx"}, "write", filepath.Join(e.work, "x")), "ok")
	// rwx: loud.
	r := e.run([]string{"--mode", "rwx"}, "true")
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
	r := e.run([]string{"--policy", pol}, "sh", "-c", "pwd; echo x > here && cat "+filepath.Join(e.work, "README")+" && echo y > "+filepath.Join(e.work, "nope"))
	if !strings.HasPrefix(r.Stdout, "/scratch\nhello\n") || r.Code == 0 {
		t.Errorf("scratch\n%s", r)
	}
}
