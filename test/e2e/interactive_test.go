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
	beforeReady func(u *sandboxtest.Tmux)
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
			beforeReady: func(u *sandboxtest.Tmux) { u.WaitText("trust this folder"); u.Keys("Enter") },
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
	exitFile := filepath.Join(rg.base, "exit")
	var envs []string
	for _, kv := range rg.env(npmBin, ic.hc, "xterm-256color") {
		envs = append(envs, fmt.Sprintf("%q", kv))
	}
	script := fmt.Sprintf("cd %q && env -i %s %q start %s --policy %q --api-base %q; echo $? > %q; sleep 60",
		rg.work, strings.Join(envs, " "), warden, ic.hc.name, rg.policyFile, rg.apiBase, exitFile)
	u := sandboxtest.NewTmux(t, 120, 40, script)
	u.Timeout = 90 * time.Second

	if ic.beforeReady != nil {
		ic.beforeReady(u)
	}
	u.WaitText(ic.ready)
	u.Keys("-l", "run the step please")
	u.WaitText("run the step please")
	u.Keys("Enter")
	if ic.approve != "" {
		u.WaitText(ic.approve)
		u.Keys("Enter") // the highlighted "Yes"
	}
	u.WaitText("Interactive run finished.")
	if b, err := os.ReadFile(filepath.Join(rg.work, "tui.txt")); err != nil || string(b) != "typed-in-tui\n" {
		t.Errorf("tui.txt = %q, %v: the tool call did not run in the sandbox", b, err)
	}

	if w := width(u.Pane()); w <= 90 {
		t.Fatalf("UI only %d columns wide before the resize", w)
	}
	u.Resize(80, 30)
	u.WaitFor("a redraw at 80 columns", func(p string) bool { return width(p) <= 80 && strings.Contains(p, "Interactive run finished") })

	for _, k := range ic.quit {
		u.Keys(k)
		time.Sleep(300 * time.Millisecond)
	}
	if got := u.WaitExit(exitFile); got != "0" {
		t.Fatalf("warden start exited %s after Ctrl-C, want 0:\n%s", got, u.Pane())
	}
}
