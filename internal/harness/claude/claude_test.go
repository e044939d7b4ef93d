package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/harness"
)

func testInput(apiBase string, key bool) *harness.BridgeInput {
	return &harness.BridgeInput{
		Workdir: "/home/dev/src/app", Home: "/home/dev/.local/share/warden/homes/claude-code/app-0123456789ab",
		RunDir: "/run/warden/harness", Self: "/run/warden/bin/warden", Config: "/run/warden/harness/bridge.json",
		Briefing: "brief", APIBase: apiBase, KeyAvailable: key,
	}
}

type hookGroup struct {
	Matcher string `json:"matcher"`
	Hooks   []struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	} `json:"hooks"`
}

type settings struct {
	Hooks                      map[string][]hookGroup `json:"hooks"`
	Sandbox                    map[string]any         `json:"sandbox"`
	AutoUpdates                *bool                  `json:"autoUpdates"`
	EnableAllProjectMcpServers *bool                  `json:"enableAllProjectMcpServers"`
}

func TestBridge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		apiBase string
		key     bool
		wantEnv map[string]string
	}{
		{name: "plain", wantEnv: map[string]string{}},
		{name: "key", key: true, wantEnv: map[string]string{}},
		{name: "api base", apiBase: "https://llm.example.com/v1", wantEnv: map[string]string{"ANTHROPIC_BASE_URL": "https://llm.example.com/v1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := testInput(tc.apiBase, tc.key)
			b, err := New().Bridge(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Files) != 1 || b.Files[0].Path != in.Home+"/settings.json" || b.Files[0].Mode != 0o444 {
				t.Fatalf("files = %+v, want one read-only settings.json in the home", b.Files)
			}
			if len(b.Env) != len(tc.wantEnv) || b.Env["ANTHROPIC_BASE_URL"] != tc.wantEnv["ANTHROPIC_BASE_URL"] {
				t.Errorf("env = %v, want %v", b.Env, tc.wantEnv)
			}
			var s settings
			dec := json.NewDecoder(bytes.NewReader(b.Files[0].Data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("settings.json: %v\n%s", err, b.Files[0].Data)
			}
			if s.Sandbox["enabled"] != false || s.AutoUpdates == nil || *s.AutoUpdates || s.EnableAllProjectMcpServers == nil || *s.EnableAllProjectMcpServers {
				t.Errorf("settings = %+v, want sandbox, autoUpdates and project MCP servers off", s)
			}
			for event, want := range map[string]string{
				"PreToolUse":   "/run/warden/bin/warden __child hook claude pre-tool /run/warden/harness/bridge.json",
				"SessionStart": "/run/warden/bin/warden __child hook claude session-start /run/warden/harness/bridge.json",
			} {
				g := s.Hooks[event]
				if len(g) != 1 || len(g[0].Hooks) != 1 {
					t.Fatalf("hooks.%s = %+v, want one group with one hook", event, g)
				}
				h := g[0].Hooks[0]
				if g[0].Matcher != "*" || h.Type != "command" || h.Command != want || h.Timeout <= 0 {
					t.Errorf("hooks.%s[0] = %+v (matcher %q), want a command hook %q on every tool", event, h, g[0].Matcher, want)
				}
			}
			if len(s.Hooks) != 2 {
				t.Errorf("hooks has events %v, want PreToolUse and SessionStart only", s.Hooks)
			}
		})
	}
}

// TestBridgeHookDenies runs the settings' PreToolUse command line through
// harness.Decide: the dialect and event it names are ones the hook
// understands, and it blocks a denied Bash call in Claude Code's framing.
func TestBridgeHookDenies(t *testing.T) {
	t.Parallel()
	b, err := New().Bridge(testInput("", false))
	if err != nil {
		t.Fatal(err)
	}
	var s settings
	if err := json.Unmarshal(b.Files[0].Data, &s); err != nil {
		t.Fatal(err)
	}
	argv := strings.Fields(s.Hooks["PreToolUse"][0].Hooks[0].Command)
	if len(argv) != 6 || argv[1] != "__child" || argv[2] != "hook" {
		t.Fatalf("PreToolUse command %q is not `warden __child hook DIALECT EVENT CONFIG`", argv)
	}
	cfg := &harness.BridgeConfig{ToolsDeny: []string{"Bash(git push*)"}}
	var out, errOut bytes.Buffer
	in := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push"}}`
	if code := harness.Decide(cfg, argv[3], argv[4], strings.NewReader(in), &out, &errOut); code != 0 {
		t.Fatalf("Decide = %d (%s)", code, errOut.String())
	}
	var answer struct {
		HookSpecificOutput struct {
			PermissionDecision string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &answer); err != nil || answer.HookSpecificOutput.PermissionDecision != "deny" {
		t.Errorf("answer %q (%v), want a deny", out.String(), err)
	}
}

func TestDescriptor(t *testing.T) {
	t.Parallel()
	d := New()
	if got := harness.Expand(d.Env["CLAUDE_CONFIG_DIR"], "/h", "/r", "/w"); got != "/h" {
		t.Errorf("CLAUDE_CONFIG_DIR expands to %q, want the managed home", got)
	}
	if d.Args != nil {
		t.Error("claude rewrites no arguments")
	}
	if len(d.Keys) != 1 || d.Keys[0].Env != "ANTHROPIC_API_KEY" || d.Keys[0].Header != "x-api-key" {
		t.Errorf("keys = %+v", d.Keys)
	}
}

// TestPrepare: onboarding is marked done once, each session's placeholder
// is approved (the list stays bounded), and Claude Code's own state in the
// file is kept.
func TestPrepare(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, ".claude.json")
	if err := os.WriteFile(path, []byte(`{"theme":"light","hasCompletedOnboarding":false,"projects":{"/p":{"x":1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var last string
	for i := range maxApproved + 5 {
		last = fmt.Sprintf("warden-placeholder-%032x", i)
		if err := New().Prepare(home, map[string]string{"ANTHROPIC_API_KEY": last}); err != nil {
			t.Fatal(err)
		}
	}
	var st struct {
		Theme      string         `json:"theme"`
		Onboarding bool           `json:"hasCompletedOnboarding"`
		Projects   map[string]any `json:"projects"`
		Responses  struct {
			Approved []string `json:"approved"`
			Rejected []string `json:"rejected"`
		} `json:"customApiKeyResponses"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Theme != "light" || st.Projects["/p"] == nil {
		t.Errorf("Claude Code's own state was lost: %s", b)
	}
	if st.Onboarding {
		t.Error("an explicit hasCompletedOnboarding: false was overridden")
	}
	if n := len(st.Responses.Approved); n != maxApproved || st.Responses.Approved[n-1] != last[len(last)-20:] {
		t.Errorf("approved = %v", st.Responses.Approved)
	}
	fresh := t.TempDir()
	if err := New().Prepare(fresh, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(fresh, ".claude.json")); !strings.Contains(string(b), `"hasCompletedOnboarding": true`) {
		t.Errorf("a new home is not marked onboarded: %s", b)
	}
}
