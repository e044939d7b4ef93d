package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Hook events, as warden's bridges name them on the hook's command line.
const (
	EventPreTool      = "pre-tool"
	EventSessionStart = "session-start"
)

// Hook dialects: how the harness frames the hook's input and reads its
// answer.
const (
	DialectClaude   = "claude"   // Claude Code and Codex: hookSpecificOutput
	DialectGemini   = "gemini"   // Gemini CLI: {"decision":"deny"}
	DialectOpenCode = "opencode" // warden's OpenCode plugin
)

// BridgeConfig is the read-only file every hook reads.
type BridgeConfig struct {
	Harness   string   `json:"harness"`
	ToolsDeny []string `json:"tools_deny"`
	Briefing  string   `json:"briefing"`
}

// hookInput is the union of the harnesses' hook inputs.
type hookInput struct {
	ToolName  string         `json:"tool_name"`
	ToolInput map[string]any `json:"tool_input"`
	// OpenCode plugin.
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// Decide runs one hook: it reads the harness's JSON on in and writes the
// answer to out. The returned code is the hook's exit status: 0, or 2 when
// the hook cannot decide, which every harness treats as "block" — a broken
// bridge fails closed.
func Decide(cfg *BridgeConfig, dialect, event string, in io.Reader, out, errOut io.Writer) int {
	switch event {
	case EventSessionStart:
		if cfg.Briefing == "" || dialect == DialectOpenCode {
			return 0
		}
		_ = json.NewEncoder(out).Encode(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "SessionStart", "additionalContext": cfg.Briefing,
		}})
		return 0
	case EventPreTool:
	default:
		fmt.Fprintf(errOut, "warden hook: unknown event %q\n", event)
		return 2
	}
	rules, err := ParseRules(cfg.ToolsDeny)
	if err != nil {
		fmt.Fprintf(errOut, "warden hook: %v\n", err)
		return 2
	}
	b, err := io.ReadAll(io.LimitReader(in, 16<<20))
	if err != nil {
		fmt.Fprintf(errOut, "warden hook: read input: %v\n", err)
		return 2
	}
	var hi hookInput
	if err := json.Unmarshal(bytes.TrimSpace(b), &hi); err != nil {
		fmt.Fprintf(errOut, "warden hook: bad input: %v\n", err)
		return 2
	}
	tool, input := hi.ToolName, hi.ToolInput
	if tool == "" {
		tool, input = hi.Tool, hi.Args
	}
	if tool == "" {
		fmt.Fprintln(errOut, "warden hook: input names no tool")
		return 2
	}
	call := CanonicalCall(tool, input)
	r, denied := Deny(rules, call)
	if !denied {
		if dialect == DialectOpenCode {
			_ = json.NewEncoder(out).Encode(map[string]string{"decision": "allow"})
		}
		return 0
	}
	reason := fmt.Sprintf("warden: the policy's tools.deny rule %q forbids %s", r, truncate(call.String(), 200))
	var answer any
	switch dialect {
	case DialectClaude:
		answer = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason,
		}}
	case DialectGemini, DialectOpenCode:
		answer = map[string]string{"decision": "deny", "reason": reason}
	default:
		fmt.Fprintln(errOut, reason)
		return 2
	}
	_ = json.NewEncoder(out).Encode(answer)
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// LoadBridgeConfig reads the bridge configuration.
func LoadBridgeConfig(path string) (*BridgeConfig, error) {
	if path == "" {
		return nil, errors.New("warden hook: no bridge configuration named")
	}
	b, err := os.ReadFile(path) //nolint:gosec // G304: warden's own read-only bridge file
	if err != nil {
		return nil, fmt.Errorf("warden hook: %w", err)
	}
	var c BridgeConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("warden hook: %s: %w", path, err)
	}
	return &c, nil
}

// HookMain is `warden __child hook DIALECT EVENT CONFIG`, run by a harness
// inside the sandbox. CONFIG is the read-only bridge file; it travels on the
// command line the harness's settings hold, not in the environment, which
// the agent's own commands inherit and could change for their children.
func HookMain() int {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "warden hook: usage: warden __child hook DIALECT EVENT CONFIG")
		return 2
	}
	cfg, err := LoadBridgeConfig(os.Args[5])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return Decide(cfg, os.Args[3], os.Args[4], os.Stdin, os.Stdout, os.Stderr)
}
