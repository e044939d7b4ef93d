package escape

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// tmux drives one detached tmux server of the test's own.
type tmux struct {
	t    *testing.T
	sock string
}

func (m *tmux) run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", m.sock}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// waitFor polls the pane until it shows want.
func (m *tmux) waitFor(want string) {
	m.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pane := m.run("capture-pane", "-p", "-t", "w")
		if strings.Contains(pane, want) {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("pane never showed %q:\n%s", want, pane)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestInteractiveTTY runs an interactive shell in the sandbox under tmux,
// as a user would run a harness: typed input arrives, a window resize is
// seen inside, Ctrl-C interrupts the foreground command (not warden), and
// the exit code comes back. The sandbox holds a pty of warden's, never the
// user's terminal.
func TestInteractiveTTY(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (CI installs it)")
	}
	e := sandboxtest.NewEnv(t)
	dir := t.TempDir()
	m := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	exitFile := filepath.Join(dir, "exit")
	script := fmt.Sprintf("cd %q && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%q TERM=screen LANG=C.UTF-8 %q run -- bash --norc --noprofile -i; echo $? > %q; sleep 60",
		e.Work, e.Home, e.Warden, exitFile)
	m.run("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "100", "-y", "30", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", m.sock, "kill-server").Run() })

	m.run("send-keys", "-t", "w", "PS1='ready> '", "Enter")
	m.waitFor("ready> ")
	m.run("send-keys", "-t", "w", "echo typed-$((6*7))", "Enter")
	m.waitFor("typed-42")

	m.run("send-keys", "-t", "w", "echo cols=$(tput cols) tty=$(test -t 0 && echo yes)", "Enter")
	m.waitFor("cols=100 tty=yes")
	m.run("resize-window", "-t", "w", "-x", "120", "-y", "30")
	m.run("send-keys", "-t", "w", "echo cols=$(tput cols)", "Enter")
	m.waitFor("cols=120")

	// Job control: Ctrl-C reaches the foreground command through the
	// pty's line discipline and the shell (and warden) carry on.
	m.run("send-keys", "-t", "w", "sleep 60; echo not-interrupted", "Enter")
	time.Sleep(300 * time.Millisecond)
	m.run("send-keys", "-t", "w", "C-c")
	m.run("send-keys", "-t", "w", "echo rc=$?", "Enter")
	m.waitFor("rc=130")

	// The sandbox cannot reach the user's terminal: its controlling
	// terminal is warden's pty, and TIOCSTI is refused anyway.
	m.run("send-keys", "-t", "w", "exit 7", "Enter")
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(exitFile)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			if got := strings.TrimSpace(string(b)); got != "7" {
				t.Fatalf("exit code %s, want 7", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("warden never exited:\n%s", m.run("capture-pane", "-p", "-t", "w"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	pane := m.run("capture-pane", "-p", "-t", "w")
	for line := range strings.SplitSeq(pane, "\n") {
		if strings.TrimSpace(line) == "not-interrupted" {
			t.Errorf("Ctrl-C did not interrupt the foreground command:\n%s", pane)
		}
	}
}

// TestNetworkPromptOnPty: with network.on_unknown: ask and an interactive
// session, warden asks on the user's terminal while the sandbox holds its
// pty: the answer's keystrokes go to warden, never to the program in the
// sandbox; "deny" refuses (403), "always" allows and is remembered.
func TestNetworkPromptOnPty(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (CI installs it)")
	}
	e := sandboxtest.NewEnv(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(up.Close)
	port := up.Listener.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(`version: 1
network:
  mode: filtered
  on_unknown: ask
  hosts: {one.test: 127.0.0.1, two.test: 127.0.0.1}
  allow_private_destinations: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config")
	m := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	script := fmt.Sprintf("cd %q && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q TERM=screen %q run --policy %q -- bash --norc --noprofile -i; sleep 60",
		e.Work, e.Home, cfg, filepath.Join(dir, "state"), e.Warden, pol)
	m.run("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "150", "-y", "40", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", m.sock, "kill-server").Run() })
	m.run("send-keys", "-t", "w", "PS1='ready> '", "Enter")
	m.waitFor("ready> ")

	curl := func(host string) {
		m.run("send-keys", "-t", "w", fmt.Sprintf("curl -s -o /dev/null -w '%s=%%{http_code}\\n' http://%s:%d/", host, host, port), "Enter")
	}
	curl("one.test")
	m.waitFor(fmt.Sprintf("allow network access to one.test:%d?", port))
	m.run("send-keys", "-t", "w", "d", "Enter")
	m.waitFor("one.test=403")
	curl("two.test")
	m.waitFor(fmt.Sprintf("allow network access to two.test:%d?", port))
	m.run("send-keys", "-t", "w", "a", "Enter")
	m.waitFor("two.test=200")
	if pane := m.run("capture-pane", "-p", "-t", "w"); strings.Contains(pane, "command not found") {
		t.Errorf("an answer's keystrokes reached the sandbox:\n%s", pane)
	}
	learned, err := os.ReadFile(filepath.Join(cfg, "warden", "learned-network.yaml"))
	if err != nil || !strings.Contains(string(learned), "two.test") || strings.Contains(string(learned), "one.test") {
		t.Errorf("learned decisions: %v\n%s", err, learned)
	}
}

// TestTargetStopIsContinued: a target that stops itself (SIGSTOP; the
// terminal's own stop signals are discarded for its orphaned process
// group) would hang the session, since nothing outside can resume it: PID
// 1 continues it and says so.
func TestTargetStopIsContinued(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (CI installs it)")
	}
	e := sandboxtest.NewEnv(t)
	dir := t.TempDir()
	m := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	script := fmt.Sprintf("cd %q && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%q TERM=screen %q run -- sh -c 'kill -STOP $$; echo resumed-after-stop'; sleep 60",
		e.Work, e.Home, e.Warden)
	m.run("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "120", "-y", "20", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", m.sock, "kill-server").Run() })
	m.waitFor("suspending is not supported inside the sandbox")
	m.waitFor("resumed-after-stop")
}
