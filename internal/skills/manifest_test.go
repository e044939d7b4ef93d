package skills_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/skills"
)

func TestParseManifestDefaults(t *testing.T) {
	t.Parallel()
	in := `name: echo
type: rest
version: 1
dependencies: {python: ">=3.10"}
sidecar:
  command: [python3, server.py, --port, "${SIDECAR_PORT}"]
  secrets:
    - name: API_KEY
    - name: OPTIONAL_KEY
      required: false
      multiline: true
  config:
    - name: BASE_URL
      pattern: "^https://"
      default: https://api.example.com
    - name: VERBOSE
      type: bool
      default: false
  health:
    initial_delay_ms: 200
  protocols: [http, sse]
  install_scripts:
    linux: install/linux.sh
`
	m, err := skills.ParseManifest("omac.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &skills.Manifest{
		Name: "echo", Type: "rest", Version: "1",
		Dependencies: map[string]any{"python": ">=3.10"},
		Sidecar: &skills.Sidecar{
			Command: []string{"python3", "server.py", "--port", "${SIDECAR_PORT}"},
			Mount:   "echo",
			Secrets: []skills.SecretSpec{
				{Name: "API_KEY", Required: new(true)},
				{Name: "OPTIONAL_KEY", Required: new(false), Multiline: true},
			},
			Config: []skills.ConfigSpec{
				{Name: "BASE_URL", Type: "string", Pattern: "^https://", Default: new("https://api.example.com")},
				{Name: "VERBOSE", Type: "bool", Default: new("false")},
			},
			Health:         skills.Health{Path: "/status", InitialDelayMS: 200, TimeoutMS: 5000, IntervalMS: 500},
			Protocols:      []any{"http", "sse"},
			InstallScripts: map[string]string{"linux": "install/linux.sh"},
		},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if !m.Sidecar.Secrets[0].IsRequired() || m.Sidecar.Secrets[1].IsRequired() {
		t.Fatal("IsRequired is wrong")
	}
}

func TestParseManifestErrors(t *testing.T) {
	t.Parallel()
	const head = "name: echo\nsidecar:\n  command: [./run]\n"
	for _, tc := range []struct {
		name string
		in   string
		want string // substring of the error
		line int
	}{
		{"ok-no-sidecar", "name: echo\n", "", 0},
		{"empty", "", "empty document", 1},
		{"not-a-map", "[a]\n", "top level must be a mapping", 1},
		{"two-docs", "name: echo\n---\nname: x\n", "more than one YAML document", 2},
		{"unknown-top", "name: echo\nhomepage: x\n", "field homepage not found", 2},
		{"unknown-sidecar", head + "  port: 3\n", "field port not found", 4},
		{"unknown-secret-key", head + "  secrets:\n    - name: A\n      secret: true\n", "field secret not found", 6},
		{"wrong-type", head + "  health:\n    timeout_ms: soon\n", "cannot unmarshal", 5},
		{"name-missing", "sidecar:\n  command: [x]\n", "name: required", 1},
		{"name-invalid", "name: Echo\n", "invalid name", 1},
		{"command-missing", "name: echo\nsidecar:\n  mount: e\n", "sidecar.command: required", 2},
		{"command-empty", "name: echo\nsidecar:\n  command: []\n", "sidecar.command: required", 3},
		{"command-empty-argv0", "name: echo\nsidecar:\n  command: [\"\"]\n", "sidecar.command: required", 3},
		{"mount-invalid", head + "  mount: -x\n", "invalid mount", 4},
		{"mount-upper", head + "  mount: Echo\n", "invalid mount", 4},
		{"passthrough-invalid", head + "  env_passthrough: [A, 1B]\n", "sidecar.env_passthrough[1]: invalid", 4},
		{"passthrough-dup", head + "  env_passthrough: [A, A]\n", "duplicate", 4},
		{"passthrough-reserved", head + "  env_passthrough: [WARDEN_TOKEN]\n", "reserved", 4},
		{"passthrough-home-ok", head + "  env_passthrough: [HOME, PATH, LANG]\n", "", 0},
		{"config-path-reserved", head + "  config:\n    - name: PATH\n", "reserved", 5},
		{"secret-name-missing", head + "  secrets:\n    - description: x\n", "secret name is required", 5},
		{"secret-name-invalid", head + "  secrets:\n    - name: my-key\n", "invalid secret name", 5},
		{"secret-reserved", head + "  secrets:\n    - name: LD_PRELOAD\n", "reserved", 5},
		{"secret-sidecar-port", head + "  secrets:\n    - name: SIDECAR_PORT\n", "reserved", 5},
		{"secret-dup", head + "  secrets:\n    - name: A\n    - name: A\n", "duplicate secret", 6},
		{"secret-pattern", head + "  secrets:\n    - name: A\n      pattern: \"([\"\n", "pattern does not compile", 6},
		{"secret-from-env", head + "  secrets:\n    - name: A\n      default_from_env: \"$X\"\n", "invalid environment variable name", 6},
		{"secret-and-passthrough-ok", head + "  env_passthrough: [A]\n  secrets:\n    - name: A\n", "", 0},
		{"config-and-secret", head + "  secrets:\n    - name: A\n  config:\n    - name: A\n", "both a secret and a config field", 7},
		{"config-and-passthrough", head + "  env_passthrough: [A]\n  config:\n    - name: A\n", "both a config field and in env_passthrough", 6},
		{"config-dup", head + "  config:\n    - name: A\n    - name: A\n", "duplicate config field", 6},
		{"config-type", head + "  config:\n    - name: A\n      type: float\n", "unknown type", 6},
		{"config-bool-default", head + "  config:\n    - name: A\n      type: bool\n      default: maybe\n", "is not a bool", 7},
		{"config-bool-default-ok", head + "  config:\n    - name: A\n      type: bool\n      default: true\n", "", 0},
		{"config-int-default", head + "  config:\n    - name: A\n      type: int\n      default: 1.5\n", "is not an int", 7},
		{"config-enum-no-choices", head + "  config:\n    - name: A\n      type: enum\n", "needs choices", 6},
		{"config-enum-default", head + "  config:\n    - name: A\n      type: enum\n      choices: [a, b]\n      default: c\n", "is not one of", 8},
		{"config-enum-dup-choice", head + "  config:\n    - name: A\n      type: enum\n      choices: [a, a]\n", "duplicate choice", 7},
		{"config-choices-not-enum", head + "  config:\n    - name: A\n      choices: [a]\n", "only for type enum", 6},
		{"config-pattern-not-string", head + "  config:\n    - name: A\n      type: int\n      pattern: x\n", "only for type string", 7},
		{"config-pattern-bad", head + "  config:\n    - name: A\n      pattern: \"(\"\n", "pattern does not compile", 6},
		{"config-pattern-default", head + "  config:\n    - name: A\n      pattern: \"^https://\"\n      default: http://x\n", "does not match pattern", 7},
		{"health-path", head + "  health:\n    path: status\n", "invalid path", 5},
		{"health-timeout", head + "  health:\n    timeout_ms: -1\n", "between 0 and 600000", 5},
		{"install-platform", head + "  install_scripts:\n    windows: x.ps1\n", "unknown platform", 5},
		{"install-escape", head + "  install_scripts:\n    linux: ../../x.sh\n", "relative path inside the skill", 5},
		{"install-abs", head + "  install_scripts:\n    linux: /bin/sh\n", "relative path inside the skill", 5},
		{"limits", head + "  limits:\n    max_body_bytes: -5\n", "must not be negative", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := skills.ParseManifest("omac.yaml", []byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			pe, ok := errors.AsType[*skills.ParseError](err)
			if !ok {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Line != tc.line {
				t.Fatalf("line = %d, want %d (%v)", pe.Line, tc.line, err)
			}
			if !strings.HasPrefix(err.Error(), "skills: omac.yaml") {
				t.Fatalf("error lacks file prefix: %v", err)
			}
		})
	}
}

func TestParseManifestAllErrors(t *testing.T) {
	t.Parallel()
	in := "name: echo\nsidecar:\n  command: [x]\n  mount: -bad\n  secrets:\n    - name: 1x\n"
	_, err := skills.ParseManifest("omac.yaml", []byte(in))
	es, ok := errors.AsType[skills.ParseErrors](err)
	if !ok || len(es) != 2 {
		t.Fatalf("want 2 errors, got %v", err)
	}
	if es[0].Line != 4 || es[1].Line != 6 {
		t.Fatalf("lines %d, %d; want 4, 6", es[0].Line, es[1].Line)
	}
}

func TestExpandCommand(t *testing.T) {
	t.Parallel()
	sc := &skills.Sidecar{Command: []string{"./bin", "--port=${SIDECAR_PORT}", "$SIDECAR_SKILL", "${UNKNOWN}x", "$$HOME", "${unterminated", "a$", "$1"}}
	env := map[string]string{"SIDECAR_PORT": "4242", "SIDECAR_SKILL": "echo"}
	got := sc.ExpandCommand(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	want := []string{"./bin", "--port=4242", "echo", "x", "$HOME", "${unterminated", "a$", "$1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if sc.Command[1] != "--port=${SIDECAR_PORT}" {
		t.Fatal("ExpandCommand modified the manifest")
	}
}

func TestLoadManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, _, err := skills.LoadManifest(dir); !errors.Is(err, skills.ErrNoManifest) {
		t.Fatalf("no manifest = %v", err)
	}
	write(t, dir, "warden.yaml", "name: x\n")
	m, p, err := skills.LoadManifest(dir)
	if err != nil || m.Name != "x" || filepath.Base(p) != "warden.yaml" {
		t.Fatalf("LoadManifest = %v, %q, %v", m, p, err)
	}
	write(t, dir, "omac.yaml", "name: x\n")
	if _, _, err := skills.LoadManifest(dir); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("both manifests = %v", err)
	}
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
