package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		wantLines []int
		wantMsg   string
	}{
		{"empty", "", nil, "\"version: 1\" is required"},
		{"missing version", "mode: sandbox\n", []int{1}, "\"version: 1\" is required"},
		{"future version", "version: 2\n", []int{1}, "unsupported version 2"},
		{"unknown key", "version: 1\nmode: sandbox\nread_path: [/x]\n", []int{3}, `unknown key "read_path"`},
		{"unknown nested key", "version: 1\nnetwork:\n  mode: blocked\n  allowed: [x]\n", []int{4}, `unknown key "allowed"`},
		{"wrong type", "version: 1\nread_paths: /x\n", []int{2}, "cannot unmarshal"},
		{"bad mode", "version: 1\n\nmode: yolo\n", []int{3}, `mode: invalid value "yolo"`},
		{"bad net mode", "version: 1\nnetwork:\n  mode: sometimes\n", []int{3}, `network.mode: invalid value "sometimes"`},
		{"bad on_unknown", "version: 1\nnetwork:\n  mode: filtered\n  on_unknown: prompt\n", []int{4}, `network.on_unknown: invalid value "prompt" (want deny or ask)`},
		{"bad dns", "version: 1\nnetwork:\n  mode: filtered\n  dns: [\"8.8.8.8\"]\n", []int{4}, `network.dns: "8.8.8.8" is not IP:port`},
		{"credential with both sources", "version: 1\nnetwork:\n  mode: filtered\n  credentials:\n    - {host: a.test, secret: k, from_env: K}\n", []int{4}, "give exactly one of secret and from_env"},
		{"bad profile on_unknown", "version: 1\nprofiles:\n  p:\n    network: {on_unknown: allow}\n", []int{4}, "profiles.p.network.on_unknown"},
		{"bad backend", "version: 1\nbackend: docker\n", []int{2}, `backend: invalid value "docker"`},
		{"relative path", "version: 1\nwrite_paths:\n  - build\n", []int{2}, "must be absolute"},
		{"bad hidden", "version: 1\nallow_hidden: [github]\n", []int{2}, "not a dotfile name"},
		{"bad env name", "version: 1\nenv:\n  passthrough: [\"A-B\"]\n", []int{3}, "invalid variable name"},
		{"bad size", "version: 1\nlimits:\n  memory: lots\n", []int{3}, "invalid size"},
		{"negative limit", "version: 1\nlimits:\n  processes: -1\n", []int{3}, "must not be negative"},
		{"two documents", "version: 1\n---\nversion: 1\n", []int{2}, "more than one YAML document"},
		{"syntax", "version: 1\nmode: [\n", []int{2}, ""},
		{"bad profile", "version: 1\nprofiles:\n  strict:\n    mode: nope\n", []int{4}, "profiles.strict.mode"},
		{"bad profile name", "version: 1\nprofiles:\n  Bad Name: {}\n", []int{3}, "invalid profile name"},
		{"several errors", "version: 1\nmode: x\nbackend: y\n", []int{2, 3}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("p.yaml", []byte(tc.in))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if tc.wantMsg != "" && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
			var lines []int
			var pes ParseErrors
			var pe *ParseError
			switch {
			case errors.As(err, &pes):
				for _, e := range pes {
					lines = append(lines, e.Line)
				}
			case errors.As(err, &pe):
				lines = []int{pe.Line}
			default:
				t.Fatalf("error %T is not a ParseError", err)
			}
			if tc.wantLines == nil {
				tc.wantLines = []int{0}
			}
			if diff := cmp.Diff(tc.wantLines, lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestParseFull(t *testing.T) {
	t.Parallel()
	in := `version: 1
mode: rx
backend: bwrap
start_in_scratch: true
read_paths: [~/.cargo/bin]
write_paths: [$GOPATH/pkg]
write_files: [~/.bash_history_warden]
deny_paths: [~/work/secret]
allow_hidden: [.venv, ".eslintrc*"]
env:
  passthrough: [GOPATH, "AWS_*"]
  set: {FOO: bar}
network:
  mode: open
  allow: ["api.anthropic.com", "*.github.com:443"]
  deny: [gist.github.com]
  rules: ["GET api.github.com/repos/myorg/**"]
  allow_private_destinations: true
  hosts: {"allowed.test": "127.0.0.1"}
  on_unavailable: deny
  on_unknown: ask
limits: {processes: 100, open_files: 1024, memory: 1GiB, cpu_seconds: 60, file_size: 512M}
skills: [echo]
tools:
  deny: ["Bash(git push*)"]
profiles:
  ci:
    extends: base
    mode: sandbox
  base:
    network: {mode: blocked}
`
	f, err := Parse("p.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if *f.Mode != ModeRX || *f.Backend != BackendBwrap || !*f.StartInScratch {
		t.Errorf("scalars: %+v", f.Layer)
	}
	if f.Network.OnUnknown == nil || *f.Network.OnUnknown != "ask" {
		t.Errorf("network.on_unknown = %v, want ask", f.Network.OnUnknown)
	}
	if got := int64(*f.Limits.Memory); got != 1<<30 {
		t.Errorf("memory = %d", got)
	}
	if got := int64(*f.Limits.FileSize); got != 512<<20 {
		t.Errorf("file_size = %d", got)
	}
	if f.Profiles["ci"].Extends != "base" || len(f.Profiles) != 2 {
		t.Errorf("profiles: %+v", f.Profiles)
	}
	if diff := cmp.Diff([]string{"GOPATH", "AWS_*"}, f.Env.Passthrough); diff != "" {
		t.Error(diff)
	}
}

func TestParseJSONSubset(t *testing.T) {
	t.Parallel()
	if _, err := Parse("p.json", []byte(`{"version": 1, "mode": "sandbox", "network": {"mode": "blocked"}}`)); err != nil {
		t.Fatal(err)
	}
}

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "10": 10, "1K": 1024, "1KiB": 1024, "2m": 2 << 20, "3G": 3 << 30, "1TB": 1 << 40, "7B": 7} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "x", "1Q", "99999999999T"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) succeeded", in)
		}
	}
}

func TestBuiltinParses(t *testing.T) {
	t.Parallel()
	f := Builtin()
	if *f.Mode != ModeSandbox || *f.Network.Mode != NetBlocked {
		t.Errorf("builtin defaults changed: %+v", f.Layer)
	}
}
