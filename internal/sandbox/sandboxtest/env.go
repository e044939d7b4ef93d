package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env is one test's machine: a fake $HOME with secrets and a git
// repository as the workdir.
type Env struct {
	t             *testing.T
	Warden, Probe string
	Home, Work    string
}

// NewEnv builds an Env under t.TempDir().
func NewEnv(t *testing.T) *Env {
	t.Helper()
	return NewEnvIn(t, t.TempDir())
}

// NewEnvOutsideTmp places the fake $HOME outside /tmp, which the sandbox
// replaces with a private tmpfs, as a real $HOME would be.
func NewEnvOutsideTmp(t *testing.T) *Env {
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
	return NewEnvIn(t, base)
}

// NewEnvIn builds an Env under base.
func NewEnvIn(t *testing.T, base string) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real sandbox")
	}
	RequireUserNS(t)
	w, p := Binaries(t)
	e := &Env{t: t, Warden: w, Probe: p, Home: filepath.Join(base, "home"), Work: filepath.Join(base, "home", "src", "proj")}
	for _, d := range []string{filepath.Join(e.Home, ".ssh"), filepath.Join(e.Home, ".aws"), e.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		".ssh/id_ed25519": "PRIVATE KEY", ".aws/credentials": "AKIA", ".bashrc": "# rc", ".gitconfig": "[user]\n",
	} {
		if err := os.WriteFile(filepath.Join(e.Home, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.Git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(e.Work, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Work, ".env"), []byte("TOKEN=s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// Git runs git in the workdir on the host.
func (e *Env) Git(args ...string) {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = e.Work
	cmd.Env = []string{"HOME=" + e.Home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Environ is the host environment warden runs with.
func (e *Env) Environ(extra ...string) []string {
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.Home, "LANG=C.UTF-8", "XDG_CONFIG_HOME=" + filepath.Join(e.Home, ".config")}, extra...)
}

// Run executes `warden run [flags] -- argv` in the workdir.
func (e *Env) Run(flags []string, argv ...string) Result {
	e.t.Helper()
	args := append([]string{"run", "--allow-read", filepath.Dir(e.Probe)}, flags...)
	args = append(append(args, "--"), argv...)
	return Run(e.t, e.Warden, Cmd{Dir: e.Work, Env: e.Environ("AWS_SECRET_ACCESS_KEY=hunter2", "LD_PRELOAD=/nonexistent.so"), Args: args})
}

// ProbeRun runs the probe with op and args.
func (e *Env) ProbeRun(flags []string, op string, args ...string) Result {
	e.t.Helper()
	return e.Run(flags, append([]string{e.Probe, op}, args...)...)
}

// Expect asserts the probe output starts with want.
func (e *Env) Expect(r Result, want string) {
	e.t.Helper()
	if got := strings.TrimSpace(r.Stdout); !strings.HasPrefix(got, want) {
		e.t.Errorf("got %q, want %q\n%s", got, want, r)
	}
}
