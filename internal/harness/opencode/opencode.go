// Package opencode describes OpenCode for `warden start`.
package opencode

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden/internal/harness"
)

// New returns the OpenCode descriptor.
func New() *harness.Descriptor {
	return &harness.Descriptor{
		Name:    "opencode",
		Aliases: []string{"oc"},
		Title:   "OpenCode",
		Binary: harness.Binary{
			Names:    []string{"opencode"},
			Package:  "opencode-ai",
			Platform: "opencode-{os}-{arch}/bin/opencode",
		},
		Env: map[string]string{
			// OpenCode keeps config, data, state and caches under XDG.
			"XDG_CONFIG_HOME": "{home}/config",
			"XDG_DATA_HOME":   "{home}/data",
			"XDG_STATE_HOME":  "{home}/state",
			"XDG_CACHE_HOME":  "{home}/cache",
			// The bridge's config (plugin, briefing) is read-only.
			"OPENCODE_CONFIG":               "{run}/opencode.json",
			"OPENCODE_DISABLE_AUTOUPDATE":   "1",
			"OPENCODE_DISABLE_SHARE":        "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
			// Claude Code's skills and CLAUDE.md belong to another harness.
			"OPENCODE_DISABLE_CLAUDE_CODE": "1",
			// The project's .opencode/ is a protected path (the agent could
			// otherwise plant config or plugins for the next session); with
			// project config off OpenCode does not try to write it.
			"OPENCODE_DISABLE_PROJECT_CONFIG": "1",
		},
		Dirs:     []string{"config/opencode", "data", "state", "cache"},
		APIHosts: []string{"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai", "opencode.ai", "models.dev"},
		Keys: []harness.Key{
			{Secret: "openai-api-key", Env: "OPENAI_API_KEY", Host: "api.openai.com"},                               //nolint:gosec // G101: names, not credentials
			{Secret: "anthropic-api-key", Env: "ANTHROPIC_API_KEY", Host: "api.anthropic.com", Header: "x-api-key"}, //nolint:gosec // G101: names, not credentials
			{Secret: "gemini-api-key", Env: "GOOGLE_GENERATIVE_AI_API_KEY", Host: "generativelanguage.googleapis.com", Header: "x-goog-api-key"},
			{Secret: "openrouter-api-key", Env: "OPENROUTER_API_KEY", Host: "openrouter.ai"}, //nolint:gosec // G101: names, not credentials
		},
		SkillDirs:  []string{"config/opencode/skills"},
		SandboxOff: "OpenCode has no OS sandbox; its permission prompts stay (run mode needs --auto)",
		Bridge:     bridge,
	}
}

// plugin is warden's OpenCode plugin: before every tool call it asks
// warden's hook and throws (which blocks the call, the message becoming
// the tool's error) unless warden answers allow. A bridge that cannot
// answer blocks too.
const plugin = `// Written by warden; read-only inside the sandbox.
import { spawnSync } from "node:child_process";

const HOOK = %s;

export const WardenBridge = async () => ({
  "tool.execute.before": async (input, output) => {
    const r = spawnSync(HOOK[0], HOOK.slice(1), {
      input: JSON.stringify({ tool: input.tool, args: output.args }),
      encoding: "utf8",
      timeout: 30000,
    });
    let answer = null;
    try { answer = JSON.parse(r.stdout); } catch { answer = null; }
    if (r.status === 0 && answer && answer.decision === "allow") return;
    throw new Error((answer && answer.reason) || ("warden: the tool-call bridge failed: " + (r.stderr || r.error || r.status)));
  },
});
`

func bridge(in *harness.BridgeInput) (*harness.Bridge, error) {
	hook, err := json.Marshal(in.HookArgv(harness.DialectOpenCode, harness.EventPreTool))
	if err != nil {
		return nil, fmt.Errorf("opencode: %w", err)
	}
	pluginPath := filepath.Join(in.RunDir, "warden-opencode.js")
	briefing := filepath.Join(in.RunDir, "WARDEN.md")
	cfg := map[string]any{
		"$schema":      "https://opencode.ai/config.json",
		"plugin":       []string{"file://" + pluginPath},
		"instructions": []string{briefing},
		"autoupdate":   false,
		"share":        "disabled",
	}
	if in.APIBase != "" {
		cfg["provider"] = map[string]any{"warden": map[string]any{
			"npm":  "@ai-sdk/openai-compatible",
			"name": "warden (--api-base)",
			"options": map[string]any{ //nolint:gosec // G101: apiKey is an OpenCode variable reference, not a credential
				"baseURL": strings.TrimSuffix(in.APIBase, "/"),
				"apiKey":  "{env:OPENAI_API_KEY}",
			},
			"models": map[string]any{"default": map[string]any{"name": "default", "tool_call": true}},
		}}
		cfg["model"] = "warden/default"
		cfg["small_model"] = "warden/default"
	}
	conf, err := harness.JSONFile(filepath.Join(in.RunDir, "opencode.json"), cfg)
	if err != nil {
		return nil, err
	}
	return &harness.Bridge{Files: []harness.File{
		conf,
		{Path: pluginPath, Data: fmt.Appendf(nil, plugin, hook), Mode: 0o444},
		{Path: briefing, Data: []byte(in.Briefing), Mode: 0o444},
	}}, nil
}
