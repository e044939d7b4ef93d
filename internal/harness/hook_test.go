package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testBriefing = "You run inside warden. git push is denied."

func testConfig() *BridgeConfig {
	return &BridgeConfig{Harness: "test", ToolsDeny: []string{"Bash(git push*)", "Write(/etc/*)"}, Briefing: testBriefing}
}

// decision is the union of the answers the dialects write.
type decision struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput *struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
		AdditionalContext        string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func decodeAnswer(t *testing.T, out []byte) (decision, map[string]any) {
	t.Helper()
	var d decision
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("answer %q is not one JSON object of the known shape: %v", out, err)
	}
	if dec.More() {
		t.Fatalf("answer %q has more than one JSON value", out)
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	return d, raw
}

func TestDecidePreTool(t *testing.T) {
	t.Parallel()
	const (
		claudeDenied   = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make && git push origin"}}`
		claudeAllowed  = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"}}`
		geminiDenied   = `{"hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":{"file_path":"/etc/hosts","content":"x"}}`
		geminiAllowed  = `{"hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":{"file_path":"/tmp/x","content":"x"}}`
		openDenied     = `{"tool":"bash","args":{"command":"git push -f"}}`
		openAllowed    = `{"tool":"read","args":{"filePath":"/etc/passwd"}}`
		wantBashReason = `warden: the policy's tools.deny rule "Bash(git push*)" forbids Bash(`
	)
	tests := []struct {
		name    string
		dialect string
		input   string
		// wantOut is the exact answer (compared as JSON); nil means no output.
		wantOut    map[string]any
		wantReason string // prefix of the reason for a deny
	}{
		{name: "claude denied", dialect: DialectClaude, input: claudeDenied, wantReason: wantBashReason + "make && git push origin)"},
		{name: "claude allowed", dialect: DialectClaude, input: claudeAllowed},
		{name: "claude reads opencode input", dialect: DialectClaude, input: openDenied, wantReason: wantBashReason + "git push -f)"},
		{name: "gemini denied", dialect: DialectGemini, input: geminiDenied, wantReason: `warden: the policy's tools.deny rule "Write(/etc/*)" forbids Write(/etc/hosts)`},
		{name: "gemini allowed", dialect: DialectGemini, input: geminiAllowed},
		{name: "opencode denied", dialect: DialectOpenCode, input: openDenied, wantReason: wantBashReason + "git push -f)"},
		{name: "opencode allowed", dialect: DialectOpenCode, input: openAllowed, wantOut: map[string]any{"decision": "allow"}},
		{name: "opencode unknown tool allowed", dialect: DialectOpenCode, input: `{"tool":"glob","args":{"pattern":"*"}}`, wantOut: map[string]any{"decision": "allow"}},
		{name: "input with surrounding whitespace", dialect: DialectClaude, input: "\n  " + claudeDenied + "\n\n", wantReason: wantBashReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := Decide(testConfig(), tc.dialect, EventPreTool, strings.NewReader(tc.input), &out, &errOut)
			if code != 0 {
				t.Fatalf("Decide = %d, want 0 (stderr %q)", code, errOut.String())
			}
			if errOut.Len() != 0 {
				t.Errorf("stderr = %q, want empty", errOut.String())
			}
			if tc.wantReason == "" {
				if tc.wantOut == nil {
					if out.Len() != 0 {
						t.Errorf("allowed call wrote %q, want no output", out.String())
					}
					return
				}
				_, raw := decodeAnswer(t, out.Bytes())
				if diff := cmp.Diff(tc.wantOut, raw); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
				return
			}
			d, raw := decodeAnswer(t, out.Bytes())
			switch tc.dialect {
			case DialectClaude:
				h := d.HookSpecificOutput
				if h == nil || len(raw) != 1 {
					t.Fatalf("answer %s: want only hookSpecificOutput", out.String())
				}
				if h.HookEventName != "PreToolUse" || h.PermissionDecision != "deny" {
					t.Errorf("hookSpecificOutput = %+v, want PreToolUse deny", *h)
				}
				if !strings.HasPrefix(h.PermissionDecisionReason, tc.wantReason) {
					t.Errorf("reason = %q, want prefix %q", h.PermissionDecisionReason, tc.wantReason)
				}
			default:
				if len(raw) != 2 || d.Decision != "deny" {
					t.Fatalf("answer %s: want exactly {decision: deny, reason}", out.String())
				}
				if !strings.HasPrefix(d.Reason, tc.wantReason) {
					t.Errorf("reason = %q, want prefix %q", d.Reason, tc.wantReason)
				}
			}
		})
	}
}

func TestDecideReasonTruncated(t *testing.T) {
	t.Parallel()
	long := "git push " + strings.Repeat("x", 500)
	in, err := json.Marshal(map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": long}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Decide(testConfig(), DialectGemini, EventPreTool, bytes.NewReader(in), &out, &errOut); code != 0 {
		t.Fatalf("Decide = %d (%s)", code, errOut.String())
	}
	d, _ := decodeAnswer(t, out.Bytes())
	if d.Decision != "deny" {
		t.Fatalf("decision = %q, want deny", d.Decision)
	}
	if strings.Contains(d.Reason, long) || !strings.HasSuffix(d.Reason, "…") {
		t.Errorf("reason %q: want the call truncated with an ellipsis", d.Reason)
	}
	if len(d.Reason) > 300 {
		t.Errorf("reason is %d bytes, want it bounded", len(d.Reason))
	}
}

func TestDecideSessionStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		dialect  string
		briefing string
		want     bool // a briefing is written
	}{
		{name: "claude", dialect: DialectClaude, briefing: testBriefing, want: true},
		{name: "claude empty briefing", dialect: DialectClaude},
		{name: "opencode", dialect: DialectOpenCode, briefing: testBriefing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.Briefing = tc.briefing
			// The session-start input is not read: even garbage is fine.
			var out, errOut bytes.Buffer
			code := Decide(cfg, tc.dialect, EventSessionStart, strings.NewReader("not json"), &out, &errOut)
			if code != 0 {
				t.Fatalf("Decide = %d, want 0 (stderr %q)", code, errOut.String())
			}
			if !tc.want {
				if out.Len() != 0 {
					t.Errorf("wrote %q, want nothing", out.String())
				}
				return
			}
			d, raw := decodeAnswer(t, out.Bytes())
			if len(raw) != 1 || d.HookSpecificOutput == nil {
				t.Fatalf("answer %s: want only hookSpecificOutput", out.String())
			}
			if h := d.HookSpecificOutput; h.HookEventName != "SessionStart" || h.AdditionalContext != tc.briefing || h.PermissionDecision != "" {
				t.Errorf("hookSpecificOutput = %+v, want SessionStart with the briefing", *h)
			}
		})
	}
}

// TestDecideFailsClosed: whenever the hook cannot decide it exits 2, which
// every harness reads as "block".
func TestDecideFailsClosed(t *testing.T) {
	t.Parallel()
	const denied = `{"tool_name":"Bash","tool_input":{"command":"git push"}}`
	tests := []struct {
		name    string
		cfg     func(*BridgeConfig)
		dialect string
		event   string
		input   string
		wantErr string // in stderr
	}{
		{name: "bad json", dialect: DialectClaude, event: EventPreTool, input: `{"tool_name":`, wantErr: "bad input"},
		{name: "empty input", dialect: DialectClaude, event: EventPreTool, input: "", wantErr: "bad input"},
		{name: "json array", dialect: DialectGemini, event: EventPreTool, input: `[1]`, wantErr: "bad input"},
		{name: "trailing garbage", dialect: DialectClaude, event: EventPreTool, input: denied + "x", wantErr: "bad input"},
		{name: "two objects", dialect: DialectClaude, event: EventPreTool, input: denied + denied, wantErr: "bad input"},
		{name: "no tool name", dialect: DialectClaude, event: EventPreTool, input: `{"tool_input":{"command":"git push"}}`, wantErr: "names no tool"},
		{name: "json null", dialect: DialectOpenCode, event: EventPreTool, input: `null`, wantErr: "names no tool"},
		{name: "empty tool name", dialect: DialectOpenCode, event: EventPreTool, input: `{"tool":"","args":{}}`, wantErr: "names no tool"},
		{name: "tool name not a string", dialect: DialectClaude, event: EventPreTool, input: `{"tool_name":1}`, wantErr: "bad input"},
		{name: "unknown event", dialect: DialectClaude, event: "post-tool", input: denied, wantErr: `unknown event "post-tool"`},
		{name: "empty event", dialect: DialectClaude, event: "", input: denied, wantErr: "unknown event"},
		{name: "bad rule in config", cfg: func(c *BridgeConfig) { c.ToolsDeny = []string{"Bash("} }, dialect: DialectOpenCode, event: EventPreTool, input: `{"tool":"read","args":{}}`, wantErr: `tools.deny "Bash("`},
		{name: "bad rule with allowed call", cfg: func(c *BridgeConfig) { c.ToolsDeny = append(c.ToolsDeny, "*") }, dialect: DialectClaude, event: EventPreTool, input: `{"tool_name":"Read","tool_input":{}}`, wantErr: "bad tool name"},
		{name: "unknown dialect on deny", dialect: "cursor", event: EventPreTool, input: denied, wantErr: `rule "Bash(git push*)" forbids Bash(git push)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			var out, errOut bytes.Buffer
			code := Decide(cfg, tc.dialect, tc.event, strings.NewReader(tc.input), &out, &errOut)
			if code != 2 {
				t.Errorf("Decide = %d, want 2 (stdout %q)", code, out.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout = %q, want nothing on failure", out.String())
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", errOut.String(), tc.wantErr)
			}
		})
	}
}

// TestDecideUnknownDialectAllows documents that an unknown dialect does not
// block calls no rule denies: allowing is the default answer of every
// harness, so there is nothing to frame.
func TestDecideUnknownDialectAllows(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := Decide(testConfig(), "cursor", EventPreTool, strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"ls"}}`), &out, &errOut)
	if code != 0 || out.Len() != 0 {
		t.Errorf("Decide = %d, stdout %q; want 0 and no output", code, out.String())
	}
}

func TestDecideInputLimit(t *testing.T) {
	t.Parallel()
	// An input beyond the 16 MiB limit is cut, so it no longer parses.
	big := `{"tool_name":"Bash","tool_input":{"command":"ls ` + strings.Repeat("a", 16<<20) + `"}}`
	var out, errOut bytes.Buffer
	if code := Decide(testConfig(), DialectClaude, EventPreTool, strings.NewReader(big), &out, &errOut); code != 2 {
		t.Errorf("Decide on a %d-byte input = %d, want 2", len(big), code)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestDecideReadError(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := Decide(testConfig(), DialectClaude, EventPreTool, errReader{}, &out, &errOut); code != 2 {
		t.Errorf("Decide = %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "read input: boom") {
		t.Errorf("stderr = %q", errOut.String())
	}
}

func TestLoadBridgeConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"harness":"claude-code","tools_deny":["Bash(git push*)"],"briefing":"hi","extra":1}`)
	bad := write("bad.json", `{"harness":`)
	wrongType := write("type.json", `{"tools_deny":"Bash"}`)

	t.Run("good", func(t *testing.T) {
		t.Parallel()
		c, err := LoadBridgeConfig(good)
		if err != nil {
			t.Fatal(err)
		}
		want := &BridgeConfig{Harness: "claude-code", ToolsDeny: []string{"Bash(git push*)"}, Briefing: "hi"}
		if diff := cmp.Diff(want, c); diff != "" {
			t.Errorf("config (-want +got):\n%s", diff)
		}
	})
	tests := []struct {
		name    string
		path    string
		wantErr string
		is      error
	}{
		{name: "no path", path: "", wantErr: "no bridge configuration named"},
		{name: "missing", path: filepath.Join(dir, "missing.json"), wantErr: "warden hook: ", is: fs.ErrNotExist},
		{name: "directory", path: dir, wantErr: "warden hook: "},
		{name: "bad json", path: bad, wantErr: "bad.json"},
		{name: "wrong type", path: wrongType, wantErr: "type.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := LoadBridgeConfig(tc.path)
			if err == nil {
				t.Fatalf("LoadBridgeConfig(%q) = %+v, want error", tc.path, c)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestHookMainUsage(t *testing.T) {
	// HookMain reads os.Args; not parallel.
	old := os.Args
	t.Cleanup(func() { os.Args = old })
	for _, args := range [][]string{
		{"warden", "__child", "hook"},
		{"warden", "__child", "hook", "claude", "pre-tool"},
		{"warden", "__child", "hook", "claude", "pre-tool", "", "extra"},
		{"warden", "__child", "hook", "claude", "pre-tool", filepath.Join(t.TempDir(), "missing.json")},
	} {
		t.Run(strings.Join(args[3:], " "), func(t *testing.T) {
			os.Args = args
			if code := HookMain(); code != 2 {
				t.Errorf("HookMain(%q) = %d, want 2", args, code)
			}
		})
	}
}

// fuzzRule is the one rule FuzzDecide configures.
const fuzzRule = "Bash(git push*)"

// FuzzDecide feeds arbitrary hook input to the claude dialect: the hook
// must never panic, must exit 0 or 2, and an exit 0 on a Bash call whose
// command starts with "git push" must carry a deny.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{
		`{"tool_name":"Bash","tool_input":{"command":"git push"}}`,
		`{"tool_name":"Bash","tool_input":{"command":"git status"}}`,
		`{"tool_name":"bash","tool_input":{"command":"git push; ls","cmd":"x"}}`,
		`{"tool_name":"exec_command","tool_input":{"cmd":"make && git push"}}`,
		`{"tool_name":"shell","tool_input":{"command":["bash","-lc","git push"]}}`,
		`{"tool":"bash","args":{"command":"git push -f"}}`,
		`{"tool_name":"Write","tool_input":{"file_path":"/etc/hosts"}}`,
		`{"tool_name":"","tool":"Bash","args":{"command":"git push"}}`,
		`{"tool_name":"Bash","tool_input":null}`,
		`{"tool_name":"Bash","tool_input":{"command":"git push \u0000 \ufffd"}}`,
		`{"tool_name":1}`,
		`null`,
		``,
		`{`,
	} {
		f.Add([]byte(s))
	}
	cfg := &BridgeConfig{ToolsDeny: []string{fuzzRule}, Briefing: "b"}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out, errOut bytes.Buffer
		code := Decide(cfg, DialectClaude, EventPreTool, bytes.NewReader(in), &out, &errOut)
		if code != 0 && code != 2 {
			t.Fatalf("Decide = %d, want 0 or 2", code)
		}
		if code == 2 {
			if out.Len() != 0 {
				t.Fatalf("exit 2 with stdout %q", out.String())
			}
			return
		}
		// The oracle: the same JSON decoding (encoding/json, so the same
		// key folding) but a plain prefix test instead of the matcher.
		var probe struct {
			ToolName  string         `json:"tool_name"`
			ToolInput map[string]any `json:"tool_input"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(in), &probe); err != nil {
			t.Fatalf("Decide accepted input that does not decode: %v", err)
		}
		cmd, _ := probe.ToolInput["command"].(string)
		mustDeny := strings.EqualFold(probe.ToolName, "bash") && strings.HasPrefix(cmd, "git push")
		if out.Len() == 0 {
			if mustDeny {
				t.Fatalf("Bash(%q) allowed", cmd)
			}
			return
		}
		var d decision
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatalf("output %q is not JSON: %v", out.String(), err)
		}
		h := d.HookSpecificOutput
		if h == nil || h.PermissionDecision != "deny" || !strings.Contains(h.PermissionDecisionReason, fuzzRule) {
			t.Fatalf("output %q is not a deny naming %s", out.String(), fuzzRule)
		}
	})
}
