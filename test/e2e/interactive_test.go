//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/mockmodel"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// TestInteractiveUnderTmux runs OpenCode's full-screen TUI under `warden
// start` in tmux, as a user would: the typed prompt reaches the harness, the
// model's tool call runs in the sandbox, a resize redraws the UI at the new
// width, Ctrl-C quits, and the exit code comes back through warden.
func TestInteractiveUnderTmux(t *testing.T) {
	npmBin := os.Getenv("WARDEN_E2E_BIN")
	if npmBin == "" {
		t.Fatal("WARDEN_E2E_BIN is not set; run make e2e")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed (apt-get install tmux)")
	}
	warden, _ := sandboxtest.Binaries(t)
	hc := harnessCase{name: "opencode", apiPath: "/v1", keyEnv: "OPENAI_API_KEY"}
	rg := newRig(t, hc, mockmodel.Script{
		Steps: []mockmodel.Step{{Command: "echo typed-in-tui > tui.txt && echo tui-step-ran"}},
		Final: "Interactive run finished.",
	})
	sock := filepath.Join(rg.base, "tmux.sock")
	exitFile := filepath.Join(rg.base, "exit")
	var envs []string
	for _, kv := range rg.env(npmBin, hc, "xterm-256color") {
		envs = append(envs, fmt.Sprintf("%q", kv))
	}
	script := fmt.Sprintf("cd %q && env -i %s %q start opencode --policy %q --api-base %q; echo $? > %q; sleep 60",
		rg.work, strings.Join(envs, " "), warden, rg.policyFile, rg.apiBase, exitFile)
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	pane := func() string { return tm("capture-pane", "-p", "-t", "w") }
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			p := pane()
			if ok(p) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pane never showed %s:\n%s", what, p)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	tm("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "120", "-y", "40", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })

	waitFor("the prompt box", func(p string) bool { return strings.Contains(p, "Ask anything") })
	tm("send-keys", "-t", "w", "-l", "run the step please")
	waitFor("the typed text", func(p string) bool { return strings.Contains(p, "run the step please") })
	tm("send-keys", "-t", "w", "Enter")
	waitFor("the model's final answer", func(p string) bool { return strings.Contains(p, "Interactive run finished.") })
	if b, err := os.ReadFile(filepath.Join(rg.work, "tui.txt")); err != nil || string(b) != "typed-in-tui\n" {
		t.Errorf("tui.txt = %q, %v: the tool call did not run in the sandbox", b, err)
	}

	width := func(p string) int {
		w := 0
		for line := range strings.SplitSeq(p, "\n") {
			if n := len([]rune(strings.TrimRight(line, " "))); n > w {
				w = n
			}
		}
		return w
	}
	if w := width(pane()); w <= 90 {
		t.Fatalf("UI only %d columns wide before the resize", w)
	}
	tm("resize-window", "-t", "w", "-x", "80", "-y", "30")
	waitFor("a redraw at 80 columns", func(p string) bool { return width(p) <= 80 && strings.Contains(p, "Interactive run finished.") })

	tm("send-keys", "-t", "w", "C-c")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(exitFile)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			if got := strings.TrimSpace(string(b)); got != "0" {
				t.Fatalf("warden start exited %s after Ctrl-C, want 0:\n%s", got, pane())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ctrl-C did not end the session:\n%s", pane())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
