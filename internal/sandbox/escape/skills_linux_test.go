//go:build linux

package escape_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/skills"
)

const echoSecret = "echo-secret-9c1e"

// TestSkillsEndToEnd registers the example skill with a secret, runs a
// sandbox with it, uses it over the facade socket and the in-sandbox TCP
// port (SSE streamed incrementally, WebSocket round trip), and proves the
// secret is in the sidecar and nowhere inside the sandbox. Then it attacks
// the trust anchor: a modified bundle, a planted config file and an
// agent-written skill are refused (threat F5; anchors.md §16.4–5).
func TestSkillsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real sandbox")
	}
	e := sandboxtest.NewEnv(t)
	skill := sandboxtest.EchoSkill(t)
	state := t.TempDir()
	// Approved snapshots are read-only trees; make them removable again.
	t.Cleanup(func() { _ = skills.RemoveTree(filepath.Join(state, "warden")) })
	env := e.Environ("WARDEN_KEYRING_BACKEND=file", "WARDEN_KEYRING_PASSPHRASE=e2e passphrase", "XDG_STATE_HOME="+state)
	warden := func(args ...string) sandboxtest.Result {
		return sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: env, Args: args})
	}
	secretsFile := filepath.Join(t.TempDir(), "echo.env")
	if err := os.WriteFile(secretsFile, []byte("ECHO_TOKEN="+echoSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := warden("skill", "register", skill, "--secrets-from", secretsFile, "--yes"); r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, echoSecret) {
		t.Fatalf("register\n%s", r)
	}
	r := warden("run", "--skill", "echo", "--", "sh", "-c", sandboxtest.SkillProbe(echoSecret))
	sandboxtest.CheckSkillProbe(t, r.Stdout+r.Stderr, echoSecret)

	// A planted config file in the project does not steer the sidecar.
	for _, p := range []string{".opencode/skill-config.yaml", ".warden/skill-config.yaml"} {
		full := filepath.Join(e.Work, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("echo:\n  ECHO_GREETING: pwned\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = warden("run", "--skill", "echo", "--", "curl", "-sS", "--unix-socket", "/run/warden/facade.sock", "http://warden/echo/status")
	if !strings.Contains(r.Stdout, `"greeting":"hello"`) {
		t.Errorf("planted config changed the sidecar\n%s", r)
	}
	// An agent-written skill is not registered, so it never runs.
	evil := filepath.Join(e.Work, ".agents", "skills", "evil")
	_ = os.MkdirAll(evil, 0o755)
	r = warden("run", "--skill", "evil", "--", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "evil") {
		t.Errorf("unregistered skill ran\n%s", r)
	}
	// A modified bundle is refused until approved again.
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: echo\ndescription: changed\n---\nchanged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = warden("run", "--skill", "echo", "--", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "echo") {
		t.Errorf("modified bundle ran\n%s", r)
	}
	if r := warden("skill", "approve", "echo"); r.Code != 0 {
		t.Fatalf("approve\n%s", r)
	}
	if r := warden("run", "--skill", "echo", "--", "true"); r.Code != 0 {
		t.Errorf("re-approved bundle refused\n%s", r)
	}
}
