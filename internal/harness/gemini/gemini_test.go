package gemini

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/harness"
)

func testInput(apiBase string, key bool) *harness.BridgeInput {
	return &harness.BridgeInput{
		Workdir: "/home/dev/src/app", Home: "/home/dev/.local/share/warden/homes/gemini/app-0123456789ab",
		RunDir: "/run/warden/harness", Self: "/run/warden/bin/warden", Config: "/run/warden/harness/bridge.json",
		Briefing: "brief", APIBase: apiBase, KeyAvailable: key,
	}
}

func TestBridge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		apiBase  string
		key      bool
		wantAuth bool
		wantEnv  map[string]string
	}{
		{name: "plain", wantEnv: map[string]string{}},
		{name: "key", key: true, wantAuth: true, wantEnv: map[string]string{}},
		{name: "api base without key", apiBase: "https://llm.example.com", wantEnv: map[string]string{"GOOGLE_GEMINI_BASE_URL": "https://llm.example.com"}},
		{name: "api base with key", apiBase: "https://llm.example.com", key: true, wantAuth: true, wantEnv: map[string]string{"GOOGLE_GEMINI_BASE_URL": "https://llm.example.com"}},
	}
	d := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := testInput(tc.apiBase, tc.key)
			b, err := d.Bridge(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantEnv, b.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if len(b.Files) != 2 {
				t.Fatalf("files = %d, want settings and GEMINI.md", len(b.Files))
			}
			// The system settings file is where the descriptor's variable
			// points, and the briefing where GEMINI_CLI_HOME puts ~/.gemini.
			settingsPath := harness.Expand(d.Env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"], in.Home, in.RunDir, in.Workdir)
			if b.Files[0].Path != settingsPath {
				t.Errorf("settings at %q, but GEMINI_CLI_SYSTEM_SETTINGS_PATH is %q", b.Files[0].Path, settingsPath)
			}
			geminiHome := harness.Expand(d.Env["GEMINI_CLI_HOME"], in.Home, in.RunDir, in.Workdir)
			if want := filepath.Join(geminiHome, ".gemini", "GEMINI.md"); b.Files[1].Path != want || string(b.Files[1].Data) != in.Briefing {
				t.Errorf("briefing file = %q %q, want %q with the briefing", b.Files[1].Path, b.Files[1].Data, want)
			}
			var s struct {
				Hooks map[string][]struct {
					Matcher string `json:"matcher"`
					Hooks   []struct {
						Type, Command string
					} `json:"hooks"`
				} `json:"hooks"`
				Security *struct {
					Auth struct {
						SelectedType string `json:"selectedType"`
					} `json:"auth"`
				} `json:"security"`
				Tools struct {
					Sandbox *bool `json:"sandbox"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(b.Files[0].Data, &s); err != nil {
				t.Fatalf("settings: %v", err)
			}
			bt := s.Hooks["BeforeTool"]
			if len(s.Hooks) != 1 || len(bt) != 1 || len(bt[0].Hooks) != 1 || bt[0].Matcher != "*" {
				t.Fatalf("hooks = %+v, want one BeforeTool hook on every tool", s.Hooks)
			}
			if got, want := bt[0].Hooks[0].Command, "/run/warden/bin/warden __child hook gemini pre-tool /run/warden/harness/bridge.json"; got != want {
				t.Errorf("BeforeTool command = %q, want %q", got, want)
			}
			if s.Tools.Sandbox == nil || *s.Tools.Sandbox {
				t.Error("tools.sandbox is not false")
			}
			if tc.wantAuth != (s.Security != nil) {
				t.Fatalf("security present = %v, want %v (KeyAvailable %v)", s.Security != nil, tc.wantAuth, tc.key)
			}
			if s.Security != nil && s.Security.Auth.SelectedType != "gemini-api-key" {
				t.Errorf("security.auth.selectedType = %q, want gemini-api-key", s.Security.Auth.SelectedType)
			}
		})
	}
}

func TestDescriptorDirs(t *testing.T) {
	t.Parallel()
	d := New()
	// GEMINI.md is a read-only bind, so its directory must exist.
	if !cmp.Equal(d.Dirs, []string{"gemini/.gemini"}) {
		t.Errorf("Dirs = %q, want gemini/.gemini created", d.Dirs)
	}
	if d.Binary.Script == "" || d.Binary.Platform != "" {
		t.Errorf("Binary = %+v, want a node script", d.Binary)
	}
}
