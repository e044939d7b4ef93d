package harness_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/harness"
	"github.com/wardenhq/warden/internal/harness/claude"
	"github.com/wardenhq/warden/internal/harness/codex"
	"github.com/wardenhq/warden/internal/harness/gemini"
	"github.com/wardenhq/warden/internal/harness/opencode"
)

// tree is a fake machine in a temporary directory.
type tree struct {
	t    *testing.T
	root string
	elf  []byte
}

func newTree(t *testing.T) *tree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true to stand in for a native binary: %v", err)
	}
	return &tree{t: t, root: root, elf: elf}
}

func (tr *tree) path(rel string) string { return filepath.Join(tr.root, filepath.FromSlash(rel)) }

func (tr *tree) write(rel, data string, mode fs.FileMode) string {
	tr.t.Helper()
	p := tr.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		tr.t.Fatal(err)
	}
	return p
}

// native writes a copy of /bin/true (an ELF, or Mach-O on macOS).
func (tr *tree) native(rel string) string { return tr.write(rel, string(tr.elf), 0o755) }

// stub writes a script like the one npm installs before postinstall has
// put the native binary in place.
func (tr *tree) stub(rel string) string {
	return tr.write(rel, "#!/bin/sh\necho 'postinstall did not run' >&2\nexit 1\n", 0o755)
}

func (tr *tree) pkg(rel, version string) string {
	tr.write(rel+"/package.json", `{
  "name": "x",
  "version": "`+version+`",
  "bin": {"x": "bin/x"}
}
`, 0o644)
	return tr.path(rel)
}

// link makes rel a relative symlink to target (both relative to the root),
// as npm does for global bins.
func (tr *tree) link(target, rel string) string {
	tr.t.Helper()
	p := tr.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	to, err := filepath.Rel(filepath.Dir(p), tr.path(target))
	if err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Symlink(to, p); err != nil {
		tr.t.Fatal(err)
	}
	return p
}

func linuxAMD64(path string, roots ...string) harness.Env {
	return harness.Env{Path: path, NpmRoots: roots, GOOS: "linux", GOARCH: "amd64"}
}

func TestFind(t *testing.T) {
	t.Parallel()
	const mods = "lib/node_modules"
	tests := []struct {
		name string
		d    *harness.Descriptor
		// setup builds the tree and returns the environment and the
		// expected result (nil when not found).
		setup func(tr *tree) (harness.Env, *harness.Found)
		// wantErr are substrings of the error when not found.
		wantErr []string
	}{
		{
			name: "claude npm shim to platform package",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/@anthropic-ai/claude-code", "2.1.3")
				tr.stub(mods + "/@anthropic-ai/claude-code/bin/claude.exe")
				tr.pkg(mods+"/@anthropic-ai/claude-code-linux-x64", "2.1.3")
				bin := tr.native(mods + "/@anthropic-ai/claude-code-linux-x64/claude")
				tr.link(mods+"/@anthropic-ai/claude-code/bin/claude.exe", "bin/claude")
				return linuxAMD64("relative/bin:" + tr.path("empty") + "::" + tr.path("bin")), &harness.Found{
					Argv:    []string{bin},
					Roots:   []string{pkg, tr.path(mods + "/@anthropic-ai/claude-code-linux-x64")},
					Version: "2.1.3",
				}
			},
		},
		{
			name: "claude platform package nested in the package",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/@anthropic-ai/claude-code", "2.0.0")
				tr.stub(mods + "/@anthropic-ai/claude-code/bin/claude.exe")
				bin := tr.native(mods + "/@anthropic-ai/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude")
				tr.link(mods+"/@anthropic-ai/claude-code/bin/claude.exe", "bin/claude")
				return linuxAMD64(tr.path("bin")), &harness.Found{
					Argv:    []string{bin},
					Roots:   []string{pkg, tr.path(mods + "/@anthropic-ai/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64")},
					Version: "2.0.0",
				}
			},
		},
		{
			name: "claude platform package missing",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				tr.pkg(mods+"/@anthropic-ai/claude-code", "2.1.3")
				tr.stub(mods + "/@anthropic-ai/claude-code/bin/claude.exe")
				tr.link(mods+"/@anthropic-ai/claude-code/bin/claude.exe", "bin/claude")
				return linuxAMD64(tr.path("bin")), nil
			},
			wantErr: []string{"claude-code: no usable claude in ", "/@anthropic-ai/claude-code/bin/claude.exe", "npm install -g @anthropic-ai/claude-code"},
		},
		{
			name: "claude platform binary is a stub",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				tr.pkg(mods+"/@anthropic-ai/claude-code", "2.1.3")
				tr.stub(mods + "/@anthropic-ai/claude-code/bin/claude.exe")
				tr.stub(mods + "/@anthropic-ai/claude-code-linux-x64/claude")
				tr.link(mods+"/@anthropic-ai/claude-code/bin/claude.exe", "bin/claude")
				return linuxAMD64(tr.path("bin")), nil
			},
			wantErr: []string{"no usable claude", "npm install -g"},
		},
		{
			name: "claude unsupported arch",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				tr.pkg(mods+"/@anthropic-ai/claude-code", "2.1.3")
				tr.stub(mods + "/@anthropic-ai/claude-code/bin/claude.exe")
				tr.native(mods + "/@anthropic-ai/claude-code-linux-x64/claude")
				tr.link(mods+"/@anthropic-ai/claude-code/bin/claude.exe", "bin/claude")
				return harness.Env{Path: tr.path("bin"), GOOS: "linux", GOARCH: "386"}, nil
			},
			wantErr: []string{"no usable claude"},
		},
		{
			name: "claude package without package.json",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				tr.stub(mods + "/@anthropic-ai/claude-code/bin/claude.exe")
				tr.native(mods + "/@anthropic-ai/claude-code-linux-x64/claude")
				tr.link(mods+"/@anthropic-ai/claude-code/bin/claude.exe", "bin/claude")
				return linuxAMD64(tr.path("bin")), nil
			},
			wantErr: []string{"no usable claude"},
		},
		{
			name: "claude from npm roots with empty PATH",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/@anthropic-ai/claude-code", "2.1.4")
				bin := tr.native(mods + "/@anthropic-ai/claude-code-linux-x64/claude")
				return linuxAMD64("", tr.path("other/node_modules"), tr.path(mods)), &harness.Found{
					Argv:    []string{bin},
					Roots:   []string{pkg, tr.path(mods + "/@anthropic-ai/claude-code-linux-x64")},
					Version: "2.1.4",
				}
			},
		},
		{
			name: "claude npm roots without the package",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				return linuxAMD64("", tr.path(mods)), nil
			},
			wantErr: []string{"no usable claude in " + "ROOT/" + mods + "/@anthropic-ai/claude-code", "npm install -g @anthropic-ai/claude-code"},
		},
		{
			name: "claude nothing anywhere",
			d:    claude.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				return linuxAMD64(tr.path("bin")), nil
			},
			wantErr: []string{"claude-code: claude is not on PATH (install it with: npm install -g @anthropic-ai/claude-code)"},
		},
		{
			name: "opencode native binary on PATH",
			d:    opencode.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				bin := tr.native(".opencode/bin/opencode")
				return linuxAMD64(tr.path(".opencode/bin")), &harness.Found{Argv: []string{bin}, Roots: []string{tr.path(".opencode/bin")}}
			},
		},
		{
			name: "opencode native binary through a symlink",
			d:    opencode.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				bin := tr.native("opt/opencode/opencode")
				tr.link("opt/opencode/opencode", "bin/opencode")
				return linuxAMD64(tr.path("bin")), &harness.Found{Argv: []string{bin}, Roots: []string{tr.path("opt/opencode")}}
			},
		},
		{
			name: "opencode first PATH entry wins",
			d:    opencode.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				first := tr.native("a/opencode")
				tr.native("b/opencode")
				return linuxAMD64(tr.path("a") + ":" + tr.path("b")), &harness.Found{Argv: []string{first}, Roots: []string{tr.path("a")}}
			},
		},
		{
			name: "opencode not executable",
			d:    opencode.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				tr.write("bin/opencode", string(tr.elf), 0o644)
				return linuxAMD64(tr.path("bin")), nil
			},
			wantErr: []string{"opencode is not on PATH", "npm install -g opencode-ai"},
		},
		{
			name: "opencode unscoped platform package",
			d:    opencode.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/opencode-ai", "1.0.7")
				tr.stub(mods + "/opencode-ai/bin/opencode")
				bin := tr.native(mods + "/opencode-linux-x64/bin/opencode")
				tr.link(mods+"/opencode-ai/bin/opencode", "bin/opencode")
				return linuxAMD64(tr.path("bin")), &harness.Found{
					Argv: []string{bin}, Roots: []string{pkg, tr.path(mods + "/opencode-linux-x64")}, Version: "1.0.7",
				}
			},
		},
		{
			name: "codex platform triple linux amd64",
			d:    codex.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/@openai/codex", "0.50.0")
				tr.write(mods+"/@openai/codex/bin/codex.js", "#!/usr/bin/env node\n", 0o755)
				bin := tr.native(mods + "/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
				tr.link(mods+"/@openai/codex/bin/codex.js", "bin/codex")
				return linuxAMD64(tr.path("bin")), &harness.Found{
					Argv: []string{bin}, Roots: []string{pkg, tr.path(mods + "/@openai/codex-linux-x64")}, Version: "0.50.0",
				}
			},
		},
		{
			name: "codex platform triple darwin arm64",
			d:    codex.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/@openai/codex", "0.50.0")
				bin := tr.native(mods + "/@openai/codex-darwin-arm64/vendor/aarch64-apple-darwin/bin/codex")
				return harness.Env{NpmRoots: []string{tr.path(mods)}, GOOS: "darwin", GOARCH: "arm64"}, &harness.Found{
					Argv: []string{bin}, Roots: []string{pkg, tr.path(mods + "/@openai/codex-darwin-arm64")}, Version: "0.50.0",
				}
			},
		},
		{
			name: "gemini script run with node",
			d:    gemini.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/@google/gemini-cli", "0.9.0")
				script := tr.write(mods+"/@google/gemini-cli/bundle/gemini.js", "#!/usr/bin/env node\n", 0o755)
				tr.link(mods+"/@google/gemini-cli/bundle/gemini.js", "bin/gemini")
				node := tr.native("nodejs/bin/node")
				return linuxAMD64(tr.path("bin") + ":" + tr.path("nodejs/bin")), &harness.Found{
					Argv: []string{node, script}, Roots: []string{pkg, tr.path("nodejs")}, Version: "0.9.0",
				}
			},
		},
		{
			name: "gemini from npm roots",
			d:    gemini.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				pkg := tr.pkg(mods+"/@google/gemini-cli", "0.9.1")
				script := tr.write(mods+"/@google/gemini-cli/bundle/gemini.js", "", 0o644)
				node := tr.native("nodejs/bin/node")
				return linuxAMD64(tr.path("nodejs/bin"), tr.path(mods)), &harness.Found{
					Argv: []string{node, script}, Roots: []string{pkg, tr.path("nodejs")}, Version: "0.9.1",
				}
			},
		},
		{
			name: "gemini without node",
			d:    gemini.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				tr.pkg(mods+"/@google/gemini-cli", "0.9.0")
				tr.write(mods+"/@google/gemini-cli/bundle/gemini.js", "#!/usr/bin/env node\n", 0o755)
				tr.link(mods+"/@google/gemini-cli/bundle/gemini.js", "bin/gemini")
				return linuxAMD64(tr.path("bin")), nil
			},
			wantErr: []string{"no usable gemini in ", "bundle/gemini.js", "npm install -g @google/gemini-cli"},
		},
		{
			name: "gemini native binary is not the script",
			d:    gemini.New(),
			setup: func(tr *tree) (harness.Env, *harness.Found) {
				tr.native("bin/gemini")
				tr.native("bin/node")
				return linuxAMD64(tr.path("bin")), nil
			},
			wantErr: []string{"no usable gemini"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTree(t)
			env, want := tc.setup(tr)
			got, err := tc.d.Find(env)
			if want != nil {
				if err != nil {
					t.Fatalf("Find: %v", err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Find (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find = %+v, want an error", got)
			}
			if !errors.Is(err, harness.ErrNotFound) {
				t.Errorf("error %v is not ErrNotFound", err)
			}
			msg := strings.ReplaceAll(err.Error(), tr.root, "ROOT")
			for _, w := range tc.wantErr {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestHomeFor(t *testing.T) {
	t.Parallel()
	const base = "/home/u/.local/share/warden/homes"
	shape := regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}-[0-9a-f]{12}$`)

	t.Run("stable", func(t *testing.T) {
		t.Parallel()
		a := harness.HomeFor(base, "claude-code", "/home/u/src/app")
		if b := harness.HomeFor(base, "claude-code", "/home/u/src/app"); a != b {
			t.Errorf("HomeFor differs between calls: %q, %q", a, b)
		}
		if !strings.HasPrefix(a, base+"/claude-code/app-") {
			t.Errorf("HomeFor = %q, want it under %s/claude-code named app-HASH", a, base)
		}
	})
	t.Run("per workdir", func(t *testing.T) {
		t.Parallel()
		a := harness.HomeFor(base, "codex", "/home/u/one/app")
		b := harness.HomeFor(base, "codex", "/home/u/two/app")
		if a == b {
			t.Errorf("two workdirs named app share the home %q", a)
		}
	})
	t.Run("per harness", func(t *testing.T) {
		t.Parallel()
		a := harness.HomeFor(base, "codex", "/w/app")
		b := harness.HomeFor(base, "gemini", "/w/app")
		if a == b || filepath.Base(a) != filepath.Base(b) {
			t.Errorf("HomeFor(codex) = %q, HomeFor(gemini) = %q; want the same leaf under different harness dirs", a, b)
		}
	})

	tests := []struct {
		name     string
		workdir  string
		wantSlug string
	}{
		{name: "plain", workdir: "/w/my_app-2", wantSlug: "my_app-2"},
		{name: "spaces and punctuation", workdir: "/w/my app.v2!", wantSlug: "my-app-v2-"},
		{name: "shell metacharacters", workdir: "/w/$(rm -rf ~);`x`", wantSlug: "--rm--rf-----x-"},
		{name: "non ascii", workdir: "/w/prøjekt", wantSlug: "pr-jekt"},
		{name: "dot dot", workdir: "/w/..", wantSlug: "--"},
		{name: "root", workdir: "/", wantSlug: "-"},
		{name: "trailing slash", workdir: "/w/app/", wantSlug: "app"},
		{name: "capped", workdir: "/w/" + strings.Repeat("abcdefghij", 7), wantSlug: strings.Repeat("abcdefghij", 4)},
		{name: "capped non ascii", workdir: "/w/" + strings.Repeat("é", 50), wantSlug: strings.Repeat("-", 40)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := harness.HomeFor(base, "opencode", tc.workdir)
			if filepath.Dir(h) != base+"/opencode" {
				t.Errorf("HomeFor = %q, want it directly under %s/opencode", h, base)
			}
			leaf := filepath.Base(h)
			if !shape.MatchString(leaf) {
				t.Errorf("leaf %q does not look like slug-hash", leaf)
			}
			if slug := leaf[:len(leaf)-13]; slug != tc.wantSlug {
				t.Errorf("slug = %q, want %q", slug, tc.wantSlug)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{in: "{home}", want: "/h"},
		{in: "{home}/config", want: "/h/config"},
		{in: "{run}/opencode.json", want: "/r/opencode.json"},
		{in: "{workdir}:{home}:{run}", want: "/w:/h:/r"},
		{in: "{home}{home}", want: "/h/h"},
		{in: "{unknown} {HOME}", want: "{unknown} {HOME}"},
		{in: "1", want: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := harness.Expand(tc.in, "/h", "/r", "/w"); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("no recursive expansion", func(t *testing.T) {
		t.Parallel()
		if got := harness.Expand("{home}", "{run}", "/r", "/w"); got != "{run}" {
			t.Errorf("Expand = %q, want the home taken literally", got)
		}
	})
}

func TestAPIHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		base      string
		wantHost  string
		wantAllow string
		wantErr   bool
	}{
		{name: "https", base: "https://llm.example.com/v1", wantHost: "llm.example.com", wantAllow: "llm.example.com"},
		{name: "https trailing slash", base: "https://llm.example.com/", wantHost: "llm.example.com", wantAllow: "llm.example.com"},
		{name: "https port", base: "https://llm.example.com:8443/v1", wantHost: "llm.example.com", wantAllow: "llm.example.com:8443"},
		{name: "https port 443", base: "https://llm.example.com:443/v1", wantHost: "llm.example.com", wantAllow: "llm.example.com"},
		{name: "http", base: "http://localhost/v1", wantHost: "localhost", wantAllow: "localhost"},
		{name: "http port", base: "http://127.0.0.1:11434/v1", wantHost: "127.0.0.1", wantAllow: "127.0.0.1:11434"},
		{name: "ipv6 port", base: "https://[::1]:8443", wantHost: "::1", wantAllow: "[::1]:8443"},
		{name: "bad scheme", base: "ftp://llm.example.com", wantErr: true},
		{name: "no scheme", base: "llm.example.com", wantErr: true},
		{name: "userinfo", base: "https://user:pass@llm.example.com/v1", wantErr: true},
		{name: "user only", base: "https://user@llm.example.com/v1", wantErr: true},
		{name: "no host", base: "https:///v1", wantErr: true},
		{name: "empty", base: "", wantErr: true},
		{name: "unparsable", base: "https://llm.example.com:port", wantErr: true},
		{name: "control byte", base: "https://llm.example.com/\x7f", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host, allow, err := harness.APIHost(tc.base)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("APIHost(%q) = %q, %q; want an error", tc.base, host, allow)
				}
				if !strings.Contains(err.Error(), "--api-base") {
					t.Errorf("error %q does not name --api-base", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("APIHost(%q): %v", tc.base, err)
			}
			if host != tc.wantHost || allow != tc.wantAllow {
				t.Errorf("APIHost(%q) = %q, %q; want %q, %q", tc.base, host, allow, tc.wantHost, tc.wantAllow)
			}
		})
	}
}

// TestAPIHostErrorHidesCredentials: principle B.1.4 says secrets never
// appear in error text; the URL is shown redacted.
func TestAPIHostErrorHidesCredentials(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-token"
	_, _, err := harness.APIHost("https://user:" + secret + "@llm.example.com/v1")
	if err == nil {
		t.Fatal("APIHost accepted a URL with credentials")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the --api-base error repeats the password: %q", err)
	}
}

func TestHookGroups(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(harness.HookGroups(map[string]string{"PreToolUse": "a b", "SessionStart": "c"}))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"PreToolUse":[{"hooks":[{"command":"a b","timeout":30,"type":"command"}],"matcher":"*"}],` +
		`"SessionStart":[{"hooks":[{"command":"c","timeout":30,"type":"command"}],"matcher":"*"}]}`
	if string(b) != want {
		t.Errorf("HookGroups =\n%s\nwant\n%s", b, want)
	}
	if got := harness.HookGroups(nil); len(got) != 0 {
		t.Errorf("HookGroups(nil) = %v, want empty", got)
	}
}

func TestJSONFile(t *testing.T) {
	t.Parallel()
	t.Run("indented with newline", func(t *testing.T) {
		t.Parallel()
		f, err := harness.JSONFile("/r/x.json", map[string]any{"b": 1, "a": []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		want := harness.File{Path: "/r/x.json", Data: []byte("{\n  \"a\": [\n    \"x\"\n  ],\n  \"b\": 1\n}\n"), Mode: 0o444}
		if diff := cmp.Diff(want, f); diff != "" {
			t.Errorf("JSONFile (-want +got):\n%s", diff)
		}
	})
	t.Run("unmarshalable", func(t *testing.T) {
		t.Parallel()
		_, err := harness.JSONFile("/r/x.json", map[string]any{"c": make(chan int)})
		if err == nil || !strings.Contains(err.Error(), "harness: /r/x.json") {
			t.Errorf("JSONFile(chan) error = %v, want one naming the file", err)
		}
	})
}

// shellWords splits a POSIX shell command line made only of words (no
// operators, expansions or redirections); anything else is an error, so a
// command line it accepts runs exactly the words it returns.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case strings.IndexByte("\"$`;&|<>()*?[]#~=%!{}\n", c) >= 0:
			return nil, errors.New("unquoted shell metacharacter " + string(c))
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestHookCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		self     string
		config   string
		wantLine string // "" skips the exact comparison
	}{
		{
			name: "plain paths unquoted", self: "/run/warden/bin/warden", config: "/run/warden/h/bridge.json",
			wantLine: "/run/warden/bin/warden __child hook claude pre-tool /run/warden/h/bridge.json",
		},
		{
			name: "space and quote", self: "/opt/my tools/war'den", config: "/run/my dir/bridge.json",
			wantLine: `'/opt/my tools/war'\''den' __child hook claude pre-tool '/run/my dir/bridge.json'`,
		},
		{name: "empty", self: "", config: "", wantLine: "'' __child hook claude pre-tool ''"},
		{name: "expansions", self: "/tmp/$(id)/`w`/$HOME/*", config: "/tmp/a;b&c|d>e"},
		{name: "double quotes and backslash", self: `/tmp/"x"\y`, config: "/tmp/a\tb"},
		{name: "leading dash and tilde", self: "~/warden", config: "-c"},
		{name: "newline", self: "/tmp/a\nb", config: "/tmp/%!"},
	}
	sh, shErr := exec.LookPath("sh")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := &harness.BridgeInput{Self: tc.self, Config: tc.config}
			line := in.HookCommand(harness.DialectClaude, harness.EventPreTool)
			argv := in.HookArgv(harness.DialectClaude, harness.EventPreTool)
			if want := []string{tc.self, "__child", "hook", "claude", "pre-tool", tc.config}; !cmp.Equal(want, argv) {
				t.Errorf("HookArgv = %q, want %q", argv, want)
			}
			if tc.wantLine != "" && line != tc.wantLine {
				t.Errorf("HookCommand = %q, want %q", line, tc.wantLine)
			}
			words, err := shellWords(line)
			if err != nil {
				t.Fatalf("HookCommand %q: %v", line, err)
			}
			if diff := cmp.Diff(argv, words); diff != "" {
				t.Errorf("HookCommand %q does not split back into HookArgv (-want +got):\n%s", line, diff)
			}
			if shErr != nil {
				return
			}
			// The real shell agrees: printf prints each word NUL-terminated.
			out, err := exec.CommandContext(t.Context(), sh, "-c", `printf '%s\0' `+line).Output()
			if err != nil {
				t.Fatalf("sh -c %q: %v", line, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if diff := cmp.Diff(argv, got); diff != "" {
				t.Errorf("sh splits %q differently from HookArgv (-want +got):\n%s", line, diff)
			}
		})
	}
}

func TestLookupAndNames(t *testing.T) {
	t.Parallel()
	ds := []*harness.Descriptor{
		{Name: "opencode", Aliases: []string{"oc"}},
		{Name: "claude-code", Aliases: []string{"claude", "cc"}},
		{Name: "codex"},
	}
	tests := []struct {
		in   string
		want string // "" means not found
	}{
		{in: "opencode", want: "opencode"},
		{in: "oc", want: "opencode"},
		{in: "claude-code", want: "claude-code"},
		{in: "claude", want: "claude-code"},
		{in: "cc", want: "claude-code"},
		{in: "CC", want: "claude-code"},
		{in: "Claude", want: "claude-code"},
		{in: "CODEX", want: "codex"},
		{in: "", want: ""},
		{in: "cod", want: ""},
		{in: " codex", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			d, ok := harness.Lookup(ds, tc.in)
			if ok != (tc.want != "") || (ok && d.Name != tc.want) {
				t.Errorf("Lookup(%q) = %v, %v; want %q", tc.in, d, ok, tc.want)
			}
		})
	}
	if got, want := harness.Names(ds), "opencode (oc), claude-code (claude, cc), codex"; got != want {
		t.Errorf("Names = %q, want %q", got, want)
	}
	if got := harness.Names(nil); got != "" {
		t.Errorf("Names(nil) = %q, want empty", got)
	}
}

// TestFindEmptyEnv makes sure Find only consults the environment it is
// given: with no PATH and no npm roots it finds nothing, even when the host
// has the harness installed.
func TestFindEmptyEnv(t *testing.T) {
	t.Parallel()
	for _, d := range []*harness.Descriptor{claude.New(), codex.New(), gemini.New(), opencode.New()} {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			f, err := d.Find(harness.Env{GOOS: "linux", GOARCH: "amd64"})
			if !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("Find(empty env) = %+v, %v; want ErrNotFound", f, err)
			}
			if !strings.Contains(err.Error(), "npm install -g "+d.Binary.Package) {
				t.Errorf("error %q has no install hint", err)
			}
		})
	}
}
