package codex

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/harness"
)

func testInput(workdir, apiBase string) *harness.BridgeInput {
	return &harness.BridgeInput{
		Workdir: workdir, Home: "/home/dev/.local/share/warden/homes/codex/app-0123456789ab",
		RunDir: "/run/warden/harness", Self: "/run/warden/bin/warden", Config: "/run/warden/harness/bridge.json",
		Briefing: "# brief\n", APIBase: apiBase, KeyAvailable: true,
	}
}

// tomlTables reads the flat subset of TOML the bridge writes: [table]
// headers and key = value lines, values kept as written. Keys before any
// header are in table "".
func tomlTables(t *testing.T, s string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{"": {}}
	cur := ""
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			cur = line[1 : len(line)-1]
			if _, dup := out[cur]; dup {
				t.Fatalf("line %d: table [%s] defined twice", n+1, cur)
			}
			out[cur] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, " = ")
			if !ok {
				t.Fatalf("line %d: %q is not key = value", n+1, line)
			}
			if _, dup := out[cur][k]; dup {
				t.Fatalf("line %d: key %s set twice in [%s]", n+1, k, cur)
			}
			out[cur][k] = v
		}
	}
	return out
}

func TestBridge(t *testing.T) {
	t.Parallel()
	const workdir = "/home/dev/src/app"
	tests := []struct {
		name    string
		apiBase string
		// wantBaseURL is the base_url value as written; "" means no
		// warden provider.
		wantBaseURL string
	}{
		{name: "plain"},
		{name: "api base", apiBase: "https://llm.example.com:8443/v1", wantBaseURL: `"https://llm.example.com:8443/v1"`},
		{name: "api base trailing slash", apiBase: "http://127.0.0.1:11434/v1/", wantBaseURL: `"http://127.0.0.1:11434/v1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := testInput(workdir, tc.apiBase)
			b, err := New().Bridge(in)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, f := range b.Files {
				paths = append(paths, f.Path)
				if f.Mode != 0o444 {
					t.Errorf("%s mode %v, want 0444", f.Path, f.Mode)
				}
			}
			want := []string{in.Home + "/config.toml", in.Home + "/hooks.json", in.Home + "/AGENTS.md"}
			if diff := cmp.Diff(want, paths); diff != "" {
				t.Fatalf("files (-want +got):\n%s", diff)
			}
			cfg := string(b.Files[0].Data)
			if !strings.Contains(cfg, "\nsandbox_mode = \"danger-full-access\"\n") {
				t.Errorf("config.toml lacks sandbox_mode = \"danger-full-access\":\n%s", cfg)
			}
			tables := tomlTables(t, cfg)
			if got := tables[""]["sandbox_mode"]; got != `"danger-full-access"` {
				t.Errorf("sandbox_mode = %s", got)
			}
			if got := tables[`projects."`+workdir+`"`]["trust_level"]; got != `"trusted"` {
				t.Errorf("[projects.%q] trust_level = %q, want \"trusted\"", workdir, got)
			}
			if tables["features"]["plugins"] != "false" || tables["analytics"]["enabled"] != "false" {
				t.Errorf("plugins or analytics not off: %v", tables)
			}
			prov, ok := tables["model_providers.warden"]
			if tc.wantBaseURL == "" {
				if ok || tables[""]["model_provider"] != "" {
					t.Errorf("warden provider configured without --api-base:\n%s", cfg)
				}
			} else {
				if !ok || prov["base_url"] != tc.wantBaseURL || prov["env_key"] != `"OPENAI_API_KEY"` {
					t.Errorf("[model_providers.warden] = %v, want base_url %s and env_key OPENAI_API_KEY", prov, tc.wantBaseURL)
				}
				if tables[""]["model_provider"] != `"warden"` {
					t.Errorf("model_provider = %q, want \"warden\" (a top-level key, before any table)", tables[""]["model_provider"])
				}
			}

			var hooks struct {
				Hooks map[string][]struct {
					Hooks []struct{ Command string } `json:"hooks"`
				} `json:"hooks"`
			}
			if err := json.Unmarshal(b.Files[1].Data, &hooks); err != nil {
				t.Fatal(err)
			}
			for ev, want := range map[string]string{"PreToolUse": "__child hook claude pre-tool ", "SessionStart": "__child hook claude session-start "} {
				g := hooks.Hooks[ev]
				if len(g) != 1 || len(g[0].Hooks) != 1 || !strings.Contains(g[0].Hooks[0].Command, want+in.Config) {
					t.Errorf("hooks.%s = %+v, want a command running %q", ev, g, want+in.Config)
				}
			}
			if string(b.Files[2].Data) != in.Briefing {
				t.Errorf("AGENTS.md = %q, want the briefing", b.Files[2].Data)
			}
		})
	}
}

// TestBridgeWorkdirQuoting: the project table's key is the workdir as a TOML
// basic string. strconv.Quote writes Go escapes, of which TOML accepts only
// a subset.
func TestBridgeWorkdirQuoting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, workdir, wantKey string
		bug                    string
	}{
		{name: "space and quote", workdir: `/home/dev/my "app"`, wantKey: `[projects."/home/dev/my \"app\""]`},
		{name: "backslash", workdir: `/home/dev/a\b`, wantKey: `[projects."/home/dev/a\\b"]`},
		{name: "non ascii", workdir: "/home/dev/prøjekt", wantKey: `[projects."/home/dev/prøjekt"]`},
		{name: "tab", workdir: "/home/dev/a\tb", wantKey: `[projects."/home/dev/a\tb"]`},
		{
			name: "delete byte", workdir: "/home/dev/a\x7fb", wantKey: `[projects."/home/dev/a\u007fb"]`,
			bug: `strconv.Quote writes \x7f, which is not a TOML escape, so Codex cannot read config.toml`,
		},
		{
			name: "bell", workdir: "/home/dev/a\ab", wantKey: `[projects."/home/dev/a\u0007b"]`,
			bug: `strconv.Quote writes \a, which is not a TOML escape`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := New().Bridge(testInput(tc.workdir, ""))
			if err != nil {
				t.Fatal(err)
			}
			cfg := string(b.Files[0].Data)
			if !strings.Contains(cfg, "\n"+tc.wantKey+"\n") {
				if tc.bug != "" {
					t.Errorf("workdir %q: %s", tc.workdir, tc.bug)
				}
				t.Errorf("config.toml lacks %s:\n%s", tc.wantKey, cfg)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	const flag = "--dangerously-bypass-hook-trust"
	tests := []struct {
		name string
		in   []string
		want []string
		bug  string
	}{
		{name: "nil", in: nil, want: nil},
		{name: "empty", in: []string{}, want: []string{}},
		{name: "exec", in: []string{"exec", "fix the tests"}, want: []string{"exec", flag, "fix the tests"}},
		{name: "exec alone", in: []string{"exec"}, want: []string{"exec", flag}},
		{name: "exec with flags", in: []string{"exec", "--json", "-m", "o3", "task"}, want: []string{"exec", flag, "--json", "-m", "o3", "task"}},
		{name: "e alias", in: []string{"e", "task"}, want: []string{"e", flag, "task"}},
		{name: "interactive prompt", in: []string{"fix the tests"}, want: []string{"fix the tests"}},
		{name: "prompt named exec later", in: []string{"resume", "exec"}, want: []string{"resume", "exec"}},
		{name: "resume", in: []string{"resume", "--last"}, want: []string{"resume", "--last"}},
		{name: "login", in: []string{"login"}, want: []string{"login"}},
		{name: "not exec prefix", in: []string{"execute"}, want: []string{"execute"}},
		{name: "upper case", in: []string{"EXEC"}, want: []string{"EXEC"}},
		{
			name: "global option before exec", in: []string{"-c", "model=o3", "exec", "task"}, want: []string{"-c", "model=o3", "exec", flag, "task"},
			bug: "Args only looks at user[0], so `warden start codex -c model=o3 exec task` runs exec without the hook-trust bypass",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var before []string
			if tc.in != nil {
				before = append([]string{}, tc.in...)
			}
			got := Args(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				if tc.bug != "" {
					t.Errorf("%s (got %q)", tc.bug, got)
				}
				t.Errorf("Args(%q) (-want +got):\n%s", tc.in, diff)
			}
			if tc.in != nil && !cmp.Equal(before, tc.in) {
				t.Errorf("Args changed its input to %q", tc.in)
			}
		})
	}
	if New().Args == nil {
		t.Error("the descriptor does not use Args")
	}
}
