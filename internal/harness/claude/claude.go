// Package claude describes Claude Code for `warden start`.
package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/internal/fsutil"

	"github.com/wardenhq/warden/internal/harness"
)

// New returns the Claude Code descriptor.
func New() *harness.Descriptor {
	return &harness.Descriptor{
		Name:    "claude-code",
		Aliases: []string{"claude", "cc"},
		Title:   "Claude Code",
		Binary: harness.Binary{
			Names:    []string{"claude"},
			Package:  "@anthropic-ai/claude-code",
			Platform: "@anthropic-ai/claude-code-{os}-{arch}/claude",
		},
		Env: map[string]string{
			// All state (settings, transcripts, shell snapshots) goes to
			// the managed home; nothing is written to $HOME.
			"CLAUDE_CONFIG_DIR":                        "{home}",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_AUTOUPDATER":                      "1",
			// Tells Claude Code it runs in a sandbox: it then allows
			// --dangerously-skip-permissions even for uid 0.
			"IS_SANDBOX": "1",
		},
		APIHosts:   []string{"api.anthropic.com", "claude.ai", "platform.claude.com", "console.anthropic.com"},
		Keys:       []harness.Key{{Secret: "anthropic-api-key", Env: "ANTHROPIC_API_KEY", Host: "api.anthropic.com", Header: "x-api-key"}}, //nolint:gosec // G101: names of a secret and a variable, not a credential
		SkillDirs:  []string{"skills"},
		SandboxOff: `settings "sandbox": {"enabled": false}; IS_SANDBOX=1 (warden is the sandbox; the permission prompts stay the user's choice)`,
		Bridge:     bridge,
		Prepare:    prepare,
	}
}

// maxApproved bounds the approved-key list prepare keeps: one placeholder
// is added per session.
const maxApproved = 20

// prepare marks onboarding done in the managed home (its connectivity
// check would contact api.anthropic.com even with --api-base) and
// approves this session's key placeholder, which Claude Code otherwise
// asks about at every interactive start (it remembers keys by their last
// 20 characters, and warden's placeholder is new each session). The file
// stays Claude Code's: everything else in it is kept.
func prepare(home string, env map[string]string) error {
	path := filepath.Join(home, ".claude.json")
	state := map[string]any{}
	b, err := os.ReadFile(path) //nolint:gosec // G304: the managed home's own file
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &state); err != nil {
			return fmt.Errorf("claude: %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("claude: %w", err)
	}
	if _, ok := state["hasCompletedOnboarding"]; !ok {
		state["hasCompletedOnboarding"] = true
	}
	if key := env["ANTHROPIC_API_KEY"]; len(key) >= 20 {
		resp, _ := state["customApiKeyResponses"].(map[string]any)
		if resp == nil {
			resp = map[string]any{}
		}
		approved, _ := resp["approved"].([]any)
		approved = append(approved, key[len(key)-20:])
		if len(approved) > maxApproved {
			approved = approved[len(approved)-maxApproved:]
		}
		resp["approved"] = approved
		if _, ok := resp["rejected"]; !ok {
			resp["rejected"] = []any{}
		}
		state["customApiKeyResponses"] = resp
	}
	out, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return fmt.Errorf("claude: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("claude: %w", err)
	}
	return nil
}

// bridge writes the user-scope settings.json of the managed
// CLAUDE_CONFIG_DIR, read-only: hooks that ask warden before every tool
// call and brief the model at session start. The project's .claude/ is a
// protected path, so no other settings layer can be written by the agent.
func bridge(in *harness.BridgeInput) (*harness.Bridge, error) {
	settings := map[string]any{
		"hooks": harness.HookGroups(map[string]string{
			"PreToolUse":   in.HookCommand(harness.DialectClaude, harness.EventPreTool),
			"SessionStart": in.HookCommand(harness.DialectClaude, harness.EventSessionStart),
		}),
		"sandbox":                    map[string]any{"enabled": false},
		"autoUpdates":                false,
		"enableAllProjectMcpServers": false,
	}
	f, err := harness.JSONFile(filepath.Join(in.Home, "settings.json"), settings)
	if err != nil {
		return nil, err
	}
	b := &harness.Bridge{Files: []harness.File{f}, Env: map[string]string{}}
	if in.APIBase != "" {
		b.Env["ANTHROPIC_BASE_URL"] = in.APIBase
	}
	return b, nil
}
