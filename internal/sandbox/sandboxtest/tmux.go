package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tmux drives a detached tmux server of a test's own, with one session
// "w" running a shell script, the way a user drives warden at a terminal.
type Tmux struct {
	t    testing.TB
	sock string
	// Timeout bounds each wait; default 30 s.
	Timeout time.Duration
}

// NewTmux starts script in a width×height session; the server is killed
// when the test ends.
func NewTmux(t testing.TB, width, height int, script string) *Tmux {
	t.Helper()
	m := &Tmux{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock"), Timeout: 30 * time.Second}
	m.Run("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", m.sock, "kill-server").Run() })
	return m
}

// Run runs a tmux command against the test's server.
func (m *Tmux) Run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", m.sock}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Pane is what the session shows.
func (m *Tmux) Pane() string { return m.Run("capture-pane", "-p", "-t", "w") }

// Keys sends keys (tmux send-keys syntax).
func (m *Tmux) Keys(keys ...string) { m.Run(append([]string{"send-keys", "-t", "w"}, keys...)...) }

// Resize resizes the window.
func (m *Tmux) Resize(width, height int) {
	m.Run("resize-window", "-t", "w", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height))
}

// WaitFor polls the pane until ok holds, failing the test after Timeout.
func (m *Tmux) WaitFor(what string, ok func(pane string) bool) {
	m.t.Helper()
	deadline := time.Now().Add(m.Timeout)
	for {
		p := m.Pane()
		if ok(p) {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("pane never showed %s:\n%s", what, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitText waits until the pane shows s.
func (m *Tmux) WaitText(s string) {
	m.t.Helper()
	m.WaitFor(fmt.Sprintf("%q", s), func(p string) bool { return strings.Contains(p, s) })
}

// WaitExit waits until the script has written warden's exit status to
// file (`...; echo $? > file`) and returns it.
func (m *Tmux) WaitExit(file string) string {
	m.t.Helper()
	deadline := time.Now().Add(m.Timeout)
	for {
		b, err := os.ReadFile(file)
		if got := strings.TrimSpace(string(b)); err == nil && got != "" {
			return got
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("the session never ended:\n%s", m.Pane())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
