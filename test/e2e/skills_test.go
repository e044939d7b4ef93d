//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/mockmodel"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/skills"
)

// TestSkillsUnderStart is the `warden start` half of the skills end-to-end
// test, for every harness: the example skill, registered with a secret, is
// placed where that harness finds it (its description reaches the model),
// and the agent's tool call uses it over the facade socket and the
// in-sandbox TCP port (SSE streamed incrementally, a WebSocket round trip)
// while the secret stays in the sidecar and out of everything inside.
func TestSkillsUnderStart(t *testing.T) {
	npmBin := os.Getenv("WARDEN_E2E_BIN")
	if npmBin == "" {
		t.Fatal("WARDEN_E2E_BIN is not set; run make e2e")
	}
	warden, _ := sandboxtest.Binaries(t)
	skill := sandboxtest.EchoSkill(t)
	only := os.Getenv("WARDEN_E2E_ONLY")
	for _, hc := range cases {
		if only != "" && !strings.Contains(","+only+",", ","+hc.name+",") {
			continue
		}
		t.Run(hc.name, func(t *testing.T) { skillsUnderStart(t, warden, npmBin, skill, hc) })
	}
}

func skillsUnderStart(t *testing.T, warden, npmBin, skill string, hc harnessCase) {
	const secret = "echo-secret-under-start-5d2a"
	rg := newRigBodies(t, hc, mockmodel.Script{
		Steps: []mockmodel.Step{{Command: `sh ./skill-probe.sh > skill-out.txt 2>&1; tail -n 2 skill-out.txt`}},
		Final: "Skill checked.",
	}, true)
	mustWrite(t, filepath.Join(rg.work, "skill-probe.sh"), []byte(sandboxtest.SkillProbe(secret)))
	t.Cleanup(func() { _ = skills.RemoveTree(filepath.Join(rg.home, ".local", "state", "warden")) })
	env := append(rg.env(npmBin, hc, "dumb"), "WARDEN_KEYRING_BACKEND=file", "WARDEN_KEYRING_PASSPHRASE=e2e")

	secrets := filepath.Join(rg.base, "echo.env")
	mustWrite(t, secrets, []byte("ECHO_TOKEN="+secret+"\n"))
	reg := exec.Command(warden, "skill", "register", skill, "--secrets-from", secrets, "--yes")
	reg.Dir, reg.Env = rg.work, env
	if out, err := reg.CombinedOutput(); err != nil {
		t.Fatalf("register: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"start", hc.name, "--skill", "echo", "--policy", rg.policyFile, "--api-base", rg.apiBase, "--"}, hc.args...)
	cmd := exec.CommandContext(ctx, warden, args...)
	cmd.Dir, cmd.Env = rg.work, env
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	logTail(t, "warden start output", string(out))
	if err != nil {
		t.Fatalf("warden start: %v", err)
	}
	probe, err := os.ReadFile(filepath.Join(rg.work, "skill-out.txt"))
	if err != nil {
		t.Fatalf("the agent's tool call did not run the probe: %v", err)
	}
	sandboxtest.CheckSkillProbe(t, string(probe), secret)
	// The harness found the placed skill: its own listing of it reached
	// the model (warden's briefing names it too, so look for the
	// harness's format: a file location, or Claude Code's skills list).
	marker := map[string]string{"claude": `"skills":["echo"`, "codex": "echo/SKILL.md)", "opencode": "echo/SKILL.md</location>", "gemini": "echo/SKILL.md</location>"}[hc.name]
	seen := strings.Contains(string(out), marker)
	for _, r := range rg.mock.Requests() {
		seen = seen || strings.Contains(r.Body, marker)
	}
	if !seen {
		t.Errorf("%s never listed the placed echo skill (%q)", hc.name, marker)
	}
	assertAbsent(t, secret, rg.work, filepath.Join(rg.home, ".local", "share", "warden-harness"))
}
