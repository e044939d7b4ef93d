// Package codex describes OpenAI's Codex CLI for `warden start`.
package codex

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/harness"
)

// New returns the Codex CLI descriptor.
func New() *harness.Descriptor {
	return &harness.Descriptor{
		Name:  "codex",
		Title: "Codex CLI",
		Binary: harness.Binary{
			Names:    []string{"codex"},
			Package:  "@openai/codex",
			Platform: "@openai/codex-{os}-{arch}/vendor/{triple}/bin/codex",
		},
		Env: map[string]string{
			// Config, sessions and databases stay in the managed home.
			"CODEX_HOME": "{home}",
		},
		APIHosts: []string{"api.openai.com", "chatgpt.com", "auth.openai.com"},
		Keys:     []harness.Key{{Secret: "openai-api-key", Env: "OPENAI_API_KEY", Host: "api.openai.com"}}, //nolint:gosec // G101: names of a secret and a variable, not a credential
		// Codex reads $HOME/.agents/skills (and, legacy, $CODEX_HOME/skills);
		// one place, or the model sees every skill twice.
		SkillDirs:  []string{"~/.agents/skills"},
		SandboxOff: `sandbox_mode = "danger-full-access" (Codex's nested bubblewrap cannot run inside warden's, and need not); plugins, apps and analytics off`,
		Bridge:     bridge,
		Args:       Args,
	}
}

// bridge writes config.toml, hooks.json and AGENTS.md into CODEX_HOME, each
// read-only. Codex runs hooks only once trusted; `exec` gets
// --dangerously-bypass-hook-trust, which only concerns these files, that
// the agent cannot change.
func bridge(in *harness.BridgeInput) (*harness.Bridge, error) {
	var cfg strings.Builder
	cfg.WriteString("# Written by warden for this session; read-only inside the sandbox.\n")
	cfg.WriteString("sandbox_mode = \"danger-full-access\"\n")
	if in.APIBase != "" {
		cfg.WriteString("model_provider = \"warden\"\n")
	}
	cfg.WriteString("\n[analytics]\nenabled = false\n\n[features]\nplugins = false\napps = false\n")
	if in.APIBase != "" {
		fmt.Fprintf(&cfg, "\n[model_providers.warden]\nname = \"warden\"\nbase_url = %s\nwire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\"\nrequest_max_retries = 1\nstream_max_retries = 1\n",
			tomlString(strings.TrimSuffix(in.APIBase, "/")))
	}
	fmt.Fprintf(&cfg, "\n[projects.%s]\ntrust_level = \"trusted\"\n", tomlString(in.Workdir))
	hooks, err := harness.JSONFile(filepath.Join(in.Home, "hooks.json"), map[string]any{"hooks": harness.HookGroups(map[string]string{
		"PreToolUse":   in.HookCommand(harness.DialectClaude, harness.EventPreTool),
		"SessionStart": in.HookCommand(harness.DialectClaude, harness.EventSessionStart),
	})})
	if err != nil {
		return nil, err
	}
	return &harness.Bridge{
		Files: []harness.File{
			{Path: filepath.Join(in.Home, "config.toml"), Data: []byte(cfg.String()), Mode: 0o444},
			hooks,
			{Path: filepath.Join(in.Home, "AGENTS.md"), Data: []byte(in.Briefing), Mode: 0o444},
		},
	}, nil
}

// Args inserts --dangerously-bypass-hook-trust after `exec`, the one
// subcommand that refuses untrusted hooks without asking. Root options
// (-c key=value, -m MODEL, ...) may come before it.
func Args(user []string) []string {
	for i := 0; i < len(user); i++ {
		a := user[i]
		switch {
		case a == "exec" || a == "e":
			return slices.Concat(user[:i+1], []string{"--dangerously-bypass-hook-trust"}, user[i+1:])
		case rootValueFlags[a]:
			i++ // skip the flag's value
		case strings.HasPrefix(a, "-"):
		default:
			return user // another subcommand, or the interactive prompt
		}
	}
	return user
}

// rootValueFlags are Codex's root options that take a separate value.
var rootValueFlags = map[string]bool{
	"-c": true, "--config": true, "-m": true, "--model": true, "-p": true, "--profile": true,
	"-C": true, "--cd": true, "-s": true, "--sandbox": true, "-a": true, "--ask-for-approval": true,
	"-i": true, "--image": true, "--enable": true, "--disable": true, "--add-dir": true, "--local-provider": true,
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
