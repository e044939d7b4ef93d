// Package gemini describes Google's Gemini CLI for `warden start`.
package gemini

import (
	"path/filepath"

	"github.com/wardenhq/warden/internal/harness"
)

// New returns the Gemini CLI descriptor.
func New() *harness.Descriptor {
	return &harness.Descriptor{
		Name:  "gemini",
		Title: "Gemini CLI",
		Binary: harness.Binary{
			Names:   []string{"gemini"},
			Package: "@google/gemini-cli",
			Script:  "bundle/gemini.js",
		},
		Env: map[string]string{
			// ~/.gemini moves under the managed home; one level down,
			// because .gemini/ at the top of a writable tree is a
			// protected agent config path.
			"GEMINI_CLI_HOME": "{home}/gemini",
			// The system settings layer outranks user and project
			// settings: the bridge's hooks cannot be overridden.
			"GEMINI_CLI_SYSTEM_SETTINGS_PATH": "{run}/gemini-settings.json",
			// Without trust, --yolo silently falls back to prompting.
			"GEMINI_CLI_TRUST_WORKSPACE": "true",
			"GEMINI_SANDBOX":             "false",
		},
		APIHosts: []string{"generativelanguage.googleapis.com", "oauth2.googleapis.com", "accounts.google.com", "cloudcode-pa.googleapis.com"},
		Keys:     []harness.Key{{Secret: "gemini-api-key", Env: "GEMINI_API_KEY", Host: "generativelanguage.googleapis.com", Header: "x-goog-api-key"}},
		Dirs:     []string{"gemini/.gemini"},
		// One place: Gemini CLI also reads .agents/skills, and a skill in
		// both is reported as a conflict at every start.
		SkillDirs:  []string{"gemini/.gemini/skills"},
		SandboxOff: "GEMINI_SANDBOX=false and tools.sandbox false; usage statistics off",
		Bridge:     bridge,
	}
}

func bridge(in *harness.BridgeInput) (*harness.Bridge, error) {
	settings := map[string]any{
		"hooks": harness.HookGroups(map[string]string{
			"BeforeTool": in.HookCommand(harness.DialectGemini, harness.EventPreTool),
		}),
		"privacy": map[string]any{"usageStatisticsEnabled": false},
		"tools":   map[string]any{"sandbox": false},
		"general": map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	}
	if in.KeyAvailable {
		// With a key (or --api-base) the CLI must not fall back to the
		// "gateway" auth type, which headless validation rejects.
		settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}
	}
	f, err := harness.JSONFile(filepath.Join(in.RunDir, "gemini-settings.json"), settings)
	if err != nil {
		return nil, err
	}
	b := &harness.Bridge{
		Files: []harness.File{f, {Path: filepath.Join(in.Home, "gemini", ".gemini", "GEMINI.md"), Data: []byte(in.Briefing), Mode: 0o444}},
		Env:   map[string]string{},
	}
	if in.APIBase != "" {
		b.Env["GOOGLE_GEMINI_BASE_URL"] = in.APIBase
	}
	return b, nil
}
