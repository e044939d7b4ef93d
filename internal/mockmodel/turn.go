package mockmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// sideText answers requests that offer no shell tool: session titles
// (OpenCode), model routing (Gemini CLI) and other classifier calls.
const sideText = "OK."

// resultSummaryBytes is how much of each tool result the final text quotes.
const resultSummaryBytes = 200

// exchange is what the turn logic needs from a request, whatever its wire
// protocol.
type exchange struct {
	model   string
	stream  bool
	tools   []toolDecl
	results []string // text of every tool result in the conversation, in order
	size    int      // body size in bytes, for fake token counts
}

// toolDecl is one function tool offered by the harness.
type toolDecl struct {
	name  string
	props map[string]string // parameter name -> lower-case JSON schema type
}

// shellTool is the tool the mock calls and how it passes the command.
type shellTool struct {
	name string
	key  string // argument name: "command" or "cmd"
	argv bool   // the argument is an argv array, not a command line
}

// knownShells are the shell tools of the supported harnesses, preferred in
// this order: Claude Code "Bash", OpenCode "bash", Codex "exec_command",
// "shell_command" ({command:string}) and "shell" ({command:[argv]}), Gemini
// CLI "run_shell_command".
var knownShells = []string{"Bash", "bash", "exec_command", "shell_command", "shell", "run_shell_command"}

// pickShell chooses the shell-like tool among the offered ones: a known
// name first, else any tool whose name mentions shell, exec or bash and
// that takes a command or cmd parameter (which rules out helpers such as
// Claude Code's KillShell).
func pickShell(decls []toolDecl) (shellTool, bool) {
	for _, name := range knownShells {
		for _, d := range decls {
			if d.name == name {
				return newShellTool(d), true
			}
		}
	}
	for _, d := range decls {
		n := strings.ToLower(d.name)
		if !strings.Contains(n, "shell") && !strings.Contains(n, "exec") && !strings.Contains(n, "bash") {
			continue
		}
		if _, ok := d.props["command"]; ok {
			return newShellTool(d), true
		}
		if _, ok := d.props["cmd"]; ok {
			return newShellTool(d), true
		}
	}
	return shellTool{}, false
}

// newShellTool reads the argument shape from the tool's schema, falling
// back to what the known tool names take when the schema says nothing.
func newShellTool(d toolDecl) shellTool {
	st := shellTool{name: d.name, key: "command"}
	if typ, ok := d.props["command"]; ok {
		st.argv = typ == "array"
		return st
	}
	if typ, ok := d.props["cmd"]; ok {
		st.key, st.argv = "cmd", typ == "array"
		return st
	}
	switch d.name {
	case "exec_command":
		st.key = "cmd"
	case "shell":
		st.argv = true
	}
	return st
}

// turnKind is what a reply does.
type turnKind int

const (
	turnSide     turnKind = iota // plain text, no shell tool offered
	turnToolCall                 // call the shell tool
	turnFinal                    // the script's final text
)

func (k turnKind) String() string {
	switch k {
	case turnToolCall:
		return "tool_call"
	case turnFinal:
		return "final"
	default:
		return "side"
	}
}

// turn is the decided reply, independent of the wire protocol.
type turn struct {
	kind    turnKind
	step    int // index of the step, for tool calls
	tool    shellTool
	command string
	text    string
}

// decide applies the turn logic described in the package documentation.
func decide(sc Script, ex exchange) turn {
	shell, ok := pickShell(ex.tools)
	k := len(ex.results)
	switch {
	case !ok:
		return turn{kind: turnSide, text: sideText}
	case k < len(sc.Steps):
		return turn{kind: turnToolCall, step: k, tool: shell, command: sc.Steps[k].Command}
	default:
		return turn{kind: turnFinal, text: finalText(sc.final(), ex.results)}
	}
}

// callID is the tool call id for this step. Deriving it from the step keeps
// it stable when a harness retries and unique within one conversation.
func (t turn) callID(prefix string) string {
	return fmt.Sprintf("%s_mock_%d", prefix, t.step)
}

// input is the tool call's arguments as an object.
func (t turn) input() map[string]any {
	if t.tool.argv {
		return map[string]any{t.tool.key: []string{"bash", "-lc", t.command}}
	}
	return map[string]any{t.tool.key: t.command}
}

// arguments is the tool call's arguments as a JSON string, the form the
// OpenAI APIs and Anthropic's input_json_delta carry.
func (t turn) arguments() string {
	b, err := marshal(t.input())
	if err != nil { // cannot happen: strings only
		return "{}"
	}
	return string(b)
}

// outTokens is a fake output token count.
func (t turn) outTokens() int {
	if t.kind == turnToolCall {
		return len(t.arguments())/4 + 1
	}
	return len(t.text)/4 + 1
}

// finalText is the final answer followed by a numbered summary of every
// tool result.
func finalText(final string, results []string) string {
	var b strings.Builder
	b.WriteString(final)
	if len(results) > 0 {
		b.WriteString("\n\nTool results:")
	}
	for i, r := range results {
		fmt.Fprintf(&b, "\n%d. %s", i+1, clip(r, resultSummaryBytes))
	}
	return b.String()
}

// clip returns at most n bytes of s, cut at a rune boundary, marking a cut
// with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// textOf extracts the text of a tool result's content: a JSON string, an
// array of content blocks whose "text" fields are joined with newlines
// (Anthropic tool_result, OpenAI content parts), or one such block. Other
// values give their JSON text; null gives "".
func textOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) == nil {
			var texts []string
			for _, p := range parts {
				if t := textOf(p); t != "" {
					texts = append(texts, t)
				}
			}
			return strings.Join(texts, "\n")
		}
	case '{':
		var block struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &block) == nil {
			return block.Text
		}
	case 'n':
		return ""
	}
	return string(raw)
}

// schemaProps returns the property names and types of a JSON schema
// object. A type may be a string ("string", or Gemini's "STRING") or an
// array such as ["string","null"]. An unreadable schema has no properties.
func schemaProps(raw json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	props := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		props[name] = schemaType(p.Type)
	}
	return props
}

func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return strings.ToLower(one)
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return strings.ToLower(t)
			}
		}
	}
	return ""
}
