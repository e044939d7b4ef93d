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
	exitFile := filepath.Join(t.TempDir(), "exit")
	m := sandboxtest.NewTmux(t, 100, 30, fmt.Sprintf("cd %q && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%q TERM=screen LANG=C.UTF-8 %q run -- bash --norc --noprofile -i; echo $? > %q; sleep 60",
		e.Work, e.Home, e.Warden, exitFile))

	m.Keys("PS1='ready> '", "Enter")
	m.WaitText("ready> ")
	m.Keys("echo typed-$((6*7))", "Enter")
	m.WaitText("typed-42")

	m.Keys("echo cols=$(tput cols) tty=$(test -t 0 && echo yes)", "Enter")
	m.WaitText("cols=100 tty=yes")
	m.Resize(120, 30)
	m.Keys("echo cols=$(tput cols)", "Enter")
	m.WaitText("cols=120")

	// Job control: Ctrl-C reaches the foreground command through the
	// pty's line discipline and the shell (and warden) carry on.
	m.Keys("sleep 60; echo not-interrupted", "Enter")
	time.Sleep(300 * time.Millisecond)
	m.Keys("C-c")
	m.Keys("echo rc=$?", "Enter")
	m.WaitText("rc=130")

	// The sandbox cannot reach the user's terminal: its controlling
	// terminal is warden's pty, and TIOCSTI is refused anyway.
	m.Keys("exit 7", "Enter")
	if got := m.WaitExit(exitFile); got != "7" {
		t.Fatalf("exit code %s, want 7", got)
	}
	pane := m.Pane()
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
	m := sandboxtest.NewTmux(t, 150, 40, fmt.Sprintf("cd %q && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q TERM=screen %q run --policy %q -- bash --norc --noprofile -i; sleep 60",
		e.Work, e.Home, cfg, filepath.Join(dir, "state"), e.Warden, pol))
	m.Keys("PS1='ready> '", "Enter")
	m.WaitText("ready> ")

	curl := func(host string) {
		m.Keys(fmt.Sprintf("curl -s -o /dev/null -w '%s=%%{http_code}\\n' http://%s:%d/", host, host, port), "Enter")
	}
	curl("one.test")
	m.WaitText(fmt.Sprintf("allow network access to one.test:%d?", port))
	m.Keys("d", "Enter")
	m.WaitText("one.test=403")
	curl("two.test")
	m.WaitText(fmt.Sprintf("allow network access to two.test:%d?", port))
	m.Keys("a", "Enter")
	m.WaitText("two.test=200")
	if pane := m.Pane(); strings.Contains(pane, "command not found") {
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
	m := sandboxtest.NewTmux(t, 120, 20, fmt.Sprintf("cd %q && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%q TERM=screen %q run -- sh -c 'kill -STOP $$; echo resumed-after-stop'; sleep 60",
		e.Work, e.Home, e.Warden))
	m.WaitText("suspending is not supported inside the sandbox")
	m.WaitText("resumed-after-stop")
}
