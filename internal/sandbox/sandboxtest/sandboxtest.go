// Package sandboxtest builds warden and its probe for tests that run the
// real sandbox, and skips them, with the reason, where the machine lacks a
// feature. It is imported from _test.go files only.
package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// moduleRoot finds the directory holding go.mod.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("sandboxtest: no caller")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("sandboxtest: go.mod not found")
		}
		dir = parent
	}
}

// Binaries builds warden and the probe once per test process and returns
// the directory holding both. The directory is world-readable so that the
// sandbox can be granted it.
func Binaries(t testing.TB) (warden, probe string) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		buildDir, err = os.MkdirTemp("", "warden-test-bin-")
		if err != nil {
			buildErr = err
			return
		}
		if err := os.Chmod(buildDir, 0o755); err != nil {
			buildErr = err
			return
		}
		for _, b := range []struct{ out, pkg string }{{"warden", "./cmd/warden"}, {"probe", "./internal/sandbox/sandboxtest/probe"}} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, b.out), b.pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "warden"), filepath.Join(buildDir, "probe")
}

// Cleanup removes the built binaries; call it from TestMain.
func Cleanup() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// RequireLinux skips on other systems.
func RequireLinux(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("needs Linux, this is %s", runtime.GOOS)
	}
}

// RequireBwrap skips when bubblewrap is not installed.
func RequireBwrap(t testing.TB) string {
	t.Helper()
	RequireLinux(t)
	for _, p := range []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("needs bubblewrap (apt-get install bubblewrap)")
	}
	return p
}

// RequireUserNS skips when unprivileged user namespaces cannot be created.
func RequireUserNS(t testing.TB) {
	t.Helper()
	bw := RequireBwrap(t)
	out, err := exec.Command(bw, "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput()
	if err != nil {
		t.Skipf("user namespaces are unavailable here: %v: %s", err, bytes.TrimSpace(out))
	}
}

// Result is one finished command.
type Result struct {
	Code           int
	Stdout, Stderr string
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
}

// Cmd describes one warden invocation.
type Cmd struct {
	Dir   string
	Env   []string // complete environment; nil means a minimal one
	Args  []string // warden's arguments
	Stdin string
}

// Run executes warden and waits, failing the test after a minute.
func Run(t testing.TB, warden string, c Cmd) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, warden, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
	}
	cmd.Stdin = strings.NewReader(c.Stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run warden: %v", err)
	}
	return Result{Code: cmd.ProcessState.ExitCode(), Stdout: so.String(), Stderr: se.String()}
}
