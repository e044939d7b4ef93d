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

// tui drives one harness's full-screen UI in a tmux session of its own.
type tui struct {
	t    *testing.T
	sock string
}

func (u *tui) tmux(args ...string) string {
	u.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", u.sock}, args...)...).CombinedOutput()
	if err != nil {
		u.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (u *tui) pane() string { return u.tmux("capture-pane", "-p", "-t", "w") }

func (u *tui) keys(k ...string) { u.tmux(append([]string{"send-keys", "-t", "w"}, k...)...) }

// waitFor polls the pane until ok holds.
func (u *tui) waitFor(what string, ok func(string) bool) {
	u.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		p := u.pane()
		if ok(p) {
			return
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("pane never showed %s:\n%s", what, p)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (u *tui) waitText(s string) {
	u.t.Helper()
	u.waitFor(fmt.Sprintf("%q", s), func(p string) bool { return strings.Contains(p, s) })
}

// width is the widest line on the pane.
func width(p string) int {
	w := 0
	for line := range strings.SplitSeq(p, "\n") {
		if n := len([]rune(strings.TrimRight(line, " "))); n > w {
			w = n
		}
	}
	return w
}

// interactiveCase is one harness's path through its TUI: how to get to
// the prompt, and what answers a permission question, if it asks one.
type interactiveCase struct {
	hc harnessCase
	// ready appears once the prompt box takes input.
	ready string
	// beforeReady answers screens shown before it (a trust question).
	beforeReady func(u *tui)
	// approve answers the harness's own permission question for the tool
	// call ("" when it asks none).
	approve string
	// quit ends the session.
	quit []string
}

// TestInteractiveUnderTmux runs OpenCode's and Claude Code's full-screen
// TUIs under `warden start` in tmux, as a user would: the typed prompt
// reaches the harness, the model's tool call runs in the sandbox, a resize
// redraws the UI at the new width, Ctrl-C quits, and the exit code comes
// back through warden.
func TestInteractiveUnderTmux(t *testing.T) {
	npmBin := os.Getenv("WARDEN_E2E_BIN")
	if npmBin == "" {
		t.Fatal("WARDEN_E2E_BIN is not set; run make e2e")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed (apt-get install tmux)")
	}
	warden, _ := sandboxtest.Binaries(t)
	for _, ic := range []interactiveCase{
		{hc: harnessCase{name: "opencode", apiPath: "/v1", keyEnv: "OPENAI_API_KEY"}, ready: "Ask anything", quit: []string{"C-c"}},
		{
			hc: harnessCase{name: "claude", keyEnv: "ANTHROPIC_API_KEY"}, ready: "? for shortcuts",
			// Claude Code asks whether the folder is trusted: that
			// question stays the user's (warden answers only its own
			// onboarding and the key placeholder).
			beforeReady: func(u *tui) { u.waitText("trust this folder"); u.keys("Enter") },
			approve:     "Do you want to proceed?",
			quit:        []string{"C-c", "C-c"},
		},
	} {
		t.Run(ic.hc.name, func(t *testing.T) { interactive(t, warden, npmBin, ic) })
	}
}

func interactive(t *testing.T, warden, npmBin string, ic interactiveCase) {
	rg := newRig(t, ic.hc, mockmodel.Script{
		Steps: []mockmodel.Step{{Command: "echo typed-in-tui > tui.txt && echo tui-step-ran"}},
		Final: "Interactive run finished.",
	})
	u := &tui{t: t, sock: filepath.Join(rg.base, "tmux.sock")}
	exitFile := filepath.Join(rg.base, "exit")
	var envs []string
	for _, kv := range rg.env(npmBin, ic.hc, "xterm-256color") {
		envs = append(envs, fmt.Sprintf("%q", kv))
	}
	script := fmt.Sprintf("cd %q && env -i %s %q start %s --policy %q --api-base %q; echo $? > %q; sleep 60",
		rg.work, strings.Join(envs, " "), warden, ic.hc.name, rg.policyFile, rg.apiBase, exitFile)
	u.tmux("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "120", "-y", "40", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", u.sock, "kill-server").Run() })

	if ic.beforeReady != nil {
		ic.beforeReady(u)
	}
	u.waitText(ic.ready)
	u.keys("-l", "run the step please")
	u.waitText("run the step please")
	u.keys("Enter")
	if ic.approve != "" {
		u.waitText(ic.approve)
		u.keys("Enter") // the highlighted "Yes"
	}
	u.waitText("Interactive run finished.")
	if b, err := os.ReadFile(filepath.Join(rg.work, "tui.txt")); err != nil || string(b) != "typed-in-tui\n" {
		t.Errorf("tui.txt = %q, %v: the tool call did not run in the sandbox", b, err)
	}

	if w := width(u.pane()); w <= 90 {
		t.Fatalf("UI only %d columns wide before the resize", w)
	}
	u.tmux("resize-window", "-t", "w", "-x", "80", "-y", "30")
	u.waitFor("a redraw at 80 columns", func(p string) bool { return width(p) <= 80 && strings.Contains(p, "Interactive run finished") })

	for _, k := range ic.quit {
		u.keys(k)
		time.Sleep(300 * time.Millisecond)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(exitFile)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			if got := strings.TrimSpace(string(b)); got != "0" {
				t.Fatalf("warden start exited %s after Ctrl-C, want 0:\n%s", got, u.pane())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ctrl-C did not end the session:\n%s", u.pane())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
