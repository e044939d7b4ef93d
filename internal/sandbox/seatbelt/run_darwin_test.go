//go:build darwin

package seatbelt

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
)

// fixture is a repository with protected and secret files, as the
// resolver would describe it.
func fixture(t *testing.T) (*policy.Resolved, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real sandbox; not in -short")
	}
	if _, err := os.Stat(SandboxExec); err != nil {
		t.Skipf("no %s", SandboxExec)
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(base, "repo")
	home := filepath.Join(base, "home")
	for _, d := range []string{repo + "/.git/hooks", repo + "/sub", home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, c := range map[string]string{repo + "/.git/config": "", repo + "/.env": "TOKEN=x", repo + "/main.go": "package main"} {
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := &policy.Resolved{
		Mode:    policy.ModeSandbox,
		Workdir: repo,
		Home:    home,
		Write:   []policy.Grant{{Path: repo, Dir: true, Exists: true, Rule: "workdir"}},
		Deny:    []policy.Grant{{Path: repo + "/.env", Exists: true, Rule: "test"}},
		Protect: []policy.Grant{
			{Path: repo + "/.claude", Dir: true, Rule: "test"},
			{Path: repo + "/.git/config", Exists: true, Rule: "test"},
			{Path: repo + "/.git/hooks", Dir: true, Exists: true, Rule: "test"},
		},
		Pin:     []string{repo + "/.git"},
		Env:     []string{"PATH=/usr/bin:/bin", "HOME=" + home, "LANG=C"},
		Network: policy.NetworkSpec{Mode: policy.NetBlocked},
	}
	return res, repo
}

func run(t *testing.T, rn *Runner, res *policy.Resolved, script string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	rn.Stdin, rn.Stdout, rn.Stderr = strings.NewReader(""), &out, &out
	code, err := rn.Run(t.Context(), &sandbox.Spec{Policy: res, Argv: []string{"/bin/sh", "-c", script}})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return code, out.String()
}

func TestRunFilesystem(t *testing.T) {
	res, _ := fixture(t)
	for _, tc := range []struct {
		script string
		ok     bool
	}{
		{"echo hi > main.go && mkdir -p sub/x && rm -r sub/x && cat main.go", true},
		{"cat .git/config && ls .git/hooks", true},
		{"echo x > .git/hooks/pre-commit", false},      // A1
		{"echo x >> .git/config", false},               // A2
		{"mkdir .claude", false},                       // A5: first creation
		{"mkdir .CLAUDE", false},                       // A10
		{"echo x > .GIT/HOOKS/pre-commit", false},      // A10
		{"mv .git g", false},                           // A9
		{"mv .git/hooks h", false},                     // A9
		{"mv .GIT g", false},                           // A9 + A10
		{"cat .env", false},                            // denied read
		{"cat .ENV", false},                            // denied read, other case
		{"mv .env e; cat e", false},                    // rename out from under a deny
		{"ln .env e2; cat e2", false},                  // hard link out from under a deny
		{"ln .git/config c2; echo x >> c2", false},     // A11: hard link to a protected file
		{"echo x > " + res.Home + "/.bashrc", false},   // outside the writable tree
		{"echo x > /private/tmp/warden-escape", false}, // the shared /tmp
	} {
		t.Run(tc.script, func(t *testing.T) {
			code, out := run(t, &Runner{}, res, tc.script)
			if (code == 0) != tc.ok {
				t.Errorf("exit %d, want success=%v; output:\n%s", code, tc.ok, out)
			}
		})
	}
}

func TestRunNetwork(t *testing.T) {
	res, _ := fixture(t)
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
	port := l.Addr().(*net.TCPAddr).Port
	probe := "/usr/bin/nc -z -G 2 127.0.0.1 " + strconv.Itoa(port)

	if code, _ := run(t, &Runner{}, res, probe); code == 0 {
		t.Error("blocked: connected to a host loopback port (E17)")
	}
	filtered := *res
	filtered.Network.Mode = policy.NetFiltered
	if code, out := run(t, &Runner{ProxyPort: port}, &filtered, probe); code != 0 {
		t.Errorf("filtered: the proxy port is unreachable (exit %d):\n%s", code, out)
	}
	if code, _ := run(t, &Runner{ProxyPort: port + 1}, &filtered, probe); code == 0 {
		t.Error("filtered: connected to a port other than the proxy's")
	}
}

func TestRunExitStatus(t *testing.T) {
	res, _ := fixture(t)
	if code, _ := run(t, &Runner{}, res, "exit 7"); code != 7 {
		t.Errorf("exit status %d, want 7", code)
	}
	if code, _ := run(t, &Runner{}, res, "kill -TERM $$"); code != 128+15 {
		t.Errorf("exit status %d, want %d", code, 128+15)
	}
	var out bytes.Buffer
	rn := &Runner{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}
	if code, err := rn.Run(t.Context(), &sandbox.Spec{Policy: res, Argv: []string{"warden-no-such-command"}}); code != 127 || err == nil {
		t.Errorf("missing command: exit %d, err %v; want 127 and an error", code, err)
	}
}
