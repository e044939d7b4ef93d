package opencode

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/harness"
)

func testInput(self, apiBase string) *harness.BridgeInput {
	return &harness.BridgeInput{
		Workdir: "/home/dev/src/app", Home: "/home/dev/.local/share/warden/homes/opencode/app-0123456789ab",
		RunDir: "/run/warden/harness", Self: self, Config: "/run/warden/harness/bridge.json",
		Briefing: "brief", APIBase: apiBase, KeyAvailable: true,
	}
}

var hookLine = regexp.MustCompile(`(?m)^const HOOK = (.*);$`)

// hookArgv reads the HOOK array back out of the plugin.
func hookArgv(t *testing.T, plugin []byte) []string {
	t.Helper()
	m := hookLine.FindSubmatch(plugin)
	if m == nil {
		t.Fatalf("plugin has no `const HOOK = [...];` line:\n%s", plugin)
	}
	var argv []string
	if err := json.Unmarshal(m[1], &argv); err != nil {
		t.Fatalf("HOOK %s is not a JSON array of strings: %v", m[1], err)
	}
	return argv
}

type config struct {
	Schema       string                    `json:"$schema"`
	Plugin       []string                  `json:"plugin"`
	Instructions []string                  `json:"instructions"`
	Autoupdate   *bool                     `json:"autoupdate"`
	Share        string                    `json:"share"`
	Model        string                    `json:"model"`
	SmallModel   string                    `json:"small_model"`
	Provider     map[string]map[string]any `json:"provider"`
}

func TestBridge(t *testing.T) {
	t.Parallel()
	d := New()
	tests := []struct {
		name        string
		apiBase     string
		wantBaseURL string
	}{
		{name: "plain"},
		{name: "api base", apiBase: "https://llm.example.com:8443/v1/", wantBaseURL: "https://llm.example.com:8443/v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := testInput("/run/warden/bin/warden", tc.apiBase)
			b, err := d.Bridge(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Files) != 3 {
				t.Fatalf("files = %d, want config, plugin and briefing", len(b.Files))
			}
			conf, plugin, brief := b.Files[0], b.Files[1], b.Files[2]
			if want := harness.Expand(d.Env["OPENCODE_CONFIG"], in.Home, in.RunDir, in.Workdir); conf.Path != want {
				t.Errorf("config at %q, but OPENCODE_CONFIG is %q", conf.Path, want)
			}
			var c config
			dec := json.NewDecoder(strings.NewReader(string(conf.Data)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("opencode.json: %v", err)
			}
			if diff := cmp.Diff([]string{"file://" + plugin.Path}, c.Plugin); diff != "" {
				t.Errorf("plugin (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{brief.Path}, c.Instructions); diff != "" {
				t.Errorf("instructions (-want +got):\n%s", diff)
			}
			if string(brief.Data) != in.Briefing {
				t.Errorf("briefing = %q", brief.Data)
			}
			if c.Autoupdate == nil || *c.Autoupdate || c.Share != "disabled" {
				t.Errorf("autoupdate %v share %q, want off", c.Autoupdate, c.Share)
			}
			if tc.wantBaseURL == "" {
				if c.Provider != nil || c.Model != "" || c.SmallModel != "" {
					t.Errorf("provider configured without --api-base: %+v", c)
				}
			} else {
				opts, _ := c.Provider["warden"]["options"].(map[string]any)
				if opts["baseURL"] != tc.wantBaseURL || c.Model != "warden/default" || c.SmallModel != "warden/default" {
					t.Errorf("provider %v model %q/%q, want baseURL %q and warden/default", c.Provider, c.Model, c.SmallModel, tc.wantBaseURL)
				}
				if key, _ := opts["apiKey"].(string); key != "{env:OPENAI_API_KEY}" {
					t.Errorf("apiKey = %q, want the placeholder variable, never a key", key)
				}
			}

			js := string(plugin.Data)
			if diff := cmp.Diff(in.HookArgv(harness.DialectOpenCode, harness.EventPreTool), hookArgv(t, plugin.Data)); diff != "" {
				t.Errorf("HOOK (-want +got):\n%s", diff)
			}
			for _, must := range []string{`"tool.execute.before"`, "spawnSync(HOOK[0], HOOK.slice(1)", `answer.decision === "allow"`, "throw new Error"} {
				if !strings.Contains(js, must) {
					t.Errorf("plugin lacks %q", must)
				}
			}
			if strings.Contains(js, "%!") {
				t.Errorf("plugin has a formatting error:\n%s", js)
			}
		})
	}
}

// TestPluginHookEscaping: the warden path is data in the JavaScript, however
// odd it is.
func TestPluginHookEscaping(t *testing.T) {
	t.Parallel()
	for _, self := range []string{
		`/opt/my tools/war'den`,
		`/opt/"x"\y`,
		"/opt/a\nb",
		"/opt/</script>&\u2028\u2029",
		"/opt/%s%d%%",
	} {
		t.Run(self, func(t *testing.T) {
			t.Parallel()
			in := testInput(self, "")
			b, err := New().Bridge(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in.HookArgv(harness.DialectOpenCode, harness.EventPreTool), hookArgv(t, b.Files[1].Data)); diff != "" {
				t.Errorf("HOOK (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPluginAnswerContract: the plugin allows only on {"decision":"allow"}
// with exit 0, which is what harness.Decide writes for the opencode dialect.
func TestPluginAnswerContract(t *testing.T) {
	t.Parallel()
	argv := hookArgv(t, mustBridge(t).Files[1].Data)
	if argv[3] != harness.DialectOpenCode || argv[4] != harness.EventPreTool {
		t.Fatalf("HOOK runs dialect %q event %q", argv[3], argv[4])
	}
	cfg := &harness.BridgeConfig{ToolsDeny: []string{"Bash(git push*)"}}
	for _, tc := range []struct {
		name, input, want string
	}{
		{name: "allowed", input: `{"tool":"bash","args":{"command":"ls"}}`, want: "allow"},
		{name: "denied", input: `{"tool":"bash","args":{"command":"git push"}}`, want: "deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut strings.Builder
			code := harness.Decide(cfg, argv[3], argv[4], strings.NewReader(tc.input), &out, &errOut)
			var a struct{ Decision, Reason string }
			if err := json.Unmarshal([]byte(out.String()), &a); err != nil || code != 0 {
				t.Fatalf("Decide = %d, %q (%v)", code, out.String(), err)
			}
			if a.Decision != tc.want || (tc.want == "deny") != (a.Reason != "") {
				t.Errorf("answer = %+v, want decision %q (with a reason for a deny)", a, tc.want)
			}
		})
	}
}

func mustBridge(t *testing.T) *harness.Bridge {
	t.Helper()
	b, err := New().Bridge(testInput("/run/warden/bin/warden", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDescriptorEnv(t *testing.T) {
	t.Parallel()
	d := New()
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"} {
		if got := harness.Expand(d.Env[k], "/h", "/r", "/w"); !strings.HasPrefix(got, "/h/") {
			t.Errorf("%s = %q, want it inside the managed home", k, got)
		}
	}
	if d.Env["OPENCODE_DISABLE_PROJECT_CONFIG"] != "1" {
		t.Error("project config is not disabled")
	}
}
