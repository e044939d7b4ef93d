package mockmodel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPickShell(t *testing.T) {
	t.Parallel()
	decl := func(name string, props ...string) toolDecl {
		d := toolDecl{name: name, props: map[string]string{}}
		for i := 0; i+1 < len(props); i += 2 {
			d.props[props[i]] = props[i+1]
		}
		return d
	}
	tests := []struct {
		name  string
		decls []toolDecl
		want  shellTool
		ok    bool
	}{
		{"none", nil, shellTool{}, false},
		{"no shell-like tool", []toolDecl{decl("read", "path", "string")}, shellTool{}, false},
		{
			"claude Bash over KillShell",
			[]toolDecl{decl("KillShell", "shell_id", "string"), decl("Bash", "command", "string")},
			shellTool{name: "Bash", key: "command"},
			true,
		},
		{"KillShell alone is not a shell", []toolDecl{decl("KillShell", "shell_id", "string")}, shellTool{}, false},
		{"exec_command from schema", []toolDecl{decl("exec_command", "cmd", "string")}, shellTool{name: "exec_command", key: "cmd"}, true},
		{"exec_command without schema", []toolDecl{{name: "exec_command"}}, shellTool{name: "exec_command", key: "cmd"}, true},
		{"shell argv from schema", []toolDecl{decl("shell", "command", "array")}, shellTool{name: "shell", key: "command", argv: true}, true},
		{"shell without schema", []toolDecl{{name: "shell"}}, shellTool{name: "shell", key: "command", argv: true}, true},
		{"shell_command", []toolDecl{decl("shell_command", "command", "string")}, shellTool{name: "shell_command", key: "command"}, true},
		{"gemini", []toolDecl{decl("run_shell_command", "command", "string")}, shellTool{name: "run_shell_command", key: "command"}, true},
		{
			"known name wins over order",
			[]toolDecl{decl("my_exec", "cmd", "string"), decl("bash", "command", "string")},
			shellTool{name: "bash", key: "command"},
			true,
		},
		{"fallback by name and cmd", []toolDecl{decl("remote_exec", "cmd", "string")}, shellTool{name: "remote_exec", key: "cmd"}, true},
		{"fallback needs command parameter", []toolDecl{decl("BashOutput", "bash_id", "string")}, shellTool{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := pickShell(tt.decls)
			if ok != tt.ok || got != tt.want {
				t.Errorf("pickShell = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	bash := []toolDecl{{name: "bash", props: map[string]string{"command": "string"}}}
	tests := []struct {
		name    string
		script  Script
		ex      exchange
		kind    turnKind
		command string
		text    string
	}{
		{"no tools", testScript, exchange{}, turnSide, "", sideText},
		{"no tools with results", testScript, exchange{results: []string{"x"}}, turnSide, "", sideText},
		{"step 0", testScript, exchange{tools: bash}, turnToolCall, "echo one", ""},
		{"step 1", testScript, exchange{tools: bash, results: []string{"a"}}, turnToolCall, "touch two.txt", ""},
		{"final", testScript, exchange{tools: bash, results: []string{"a", "b"}}, turnFinal, "", "All done.\n\nTool results:\n1. a\n2. b"},
		{"extra results stay final", testScript, exchange{tools: bash, results: []string{"a", "b", "c"}}, turnFinal, "", "All done.\n\nTool results:\n1. a\n2. b\n3. c"},
		{"empty script", Script{}, exchange{tools: bash}, turnFinal, "", "Done."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := decide(tt.script, tt.ex)
			if got.kind != tt.kind || got.command != tt.command || got.text != tt.text {
				t.Errorf("decide = %v %q %q; want %v %q %q", got.kind, got.command, got.text, tt.kind, tt.command, tt.text)
			}
		})
	}
}

func TestTurnArguments(t *testing.T) {
	t.Parallel()
	cmd := `echo "a b" 'c' && ls`
	tests := []struct {
		tool shellTool
		want string
	}{
		{shellTool{name: "bash", key: "command"}, `{"command":"echo \"a b\" 'c' && ls"}`},
		{shellTool{name: "exec_command", key: "cmd"}, `{"cmd":"echo \"a b\" 'c' && ls"}`},
		{shellTool{name: "shell", key: "command", argv: true}, `{"command":["bash","-lc","echo \"a b\" 'c' && ls"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.tool.name, func(t *testing.T) {
			t.Parallel()
			tn := turn{kind: turnToolCall, tool: tt.tool, command: cmd}
			if got := tn.arguments(); got != tt.want {
				t.Errorf("arguments = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCallIDStable(t *testing.T) {
	t.Parallel()
	a := turn{step: 3}.callID("call")
	if b := (turn{step: 3}).callID("call"); a != b {
		t.Errorf("call ids differ for one step: %q, %q", a, b)
	}
	if c := (turn{step: 4}).callID("call"); a == c {
		t.Errorf("call ids equal for different steps: %q", a)
	}
}

func TestTextOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, want string
	}{
		{"empty", ``, ""},
		{"null", `null`, ""},
		{"string", `"hi\nthere"`, "hi\nthere"},
		{"blocks", `[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]`, "a\nb"},
		{"input_text parts", `[{"type":"input_text","text":"x"}]`, "x"},
		{"nested strings", `["a",["b"]]`, "a\nb"},
		{"one block", `{"type":"text","text":"t"}`, "t"},
		{"number", `42`, "42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := textOf(json.RawMessage(tt.raw)); got != tt.want {
				t.Errorf("textOf(%s) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestGeminiResultText(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, want string }{
		{`{"output":"out"}`, "out"},
		{`{"error":"bad"}`, "bad"},
		{`{"output":"","error":"bad"}`, "bad"},
		{`{"llmContent":"x"}`, `{"llmContent":"x"}`},
		{`"plain"`, "plain"},
	}
	for _, tt := range tests {
		if got := geminiResultText(json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("geminiResultText(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 199) + "é" + "tail" // é straddles byte 200
	tests := []struct {
		name, in, want string
	}{
		{"short", "abc", "abc"},
		{"exact", strings.Repeat("x", 200), strings.Repeat("x", 200)},
		{"cut", strings.Repeat("x", 201), strings.Repeat("x", 200) + "..."},
		{"rune boundary", long, strings.Repeat("a", 199) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := clip(tt.in, resultSummaryBytes); got != tt.want {
				t.Errorf("clip = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSchemaProps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		want      map[string]string
	}{
		{
			"json schema", `{"type":"object","properties":{"command":{"type":"string"},"n":{"type":["null","integer"]}}}`,
			map[string]string{"command": "string", "n": "integer"},
		},
		{"openapi upper case", `{"type":"OBJECT","properties":{"command":{"type":"ARRAY"}}}`, map[string]string{"command": "array"}},
		{"no properties", `{"type":"object"}`, map[string]string{}},
		{"not an object", `[1]`, nil},
		{"absent", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, schemaProps(json.RawMessage(tt.raw))); diff != "" {
				t.Errorf("schemaProps (-want +got):\n%s", diff)
			}
		})
	}
}
