package all_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/harness"
	"github.com/wardenhq/warden/internal/harness/all"
	"github.com/wardenhq/warden/internal/policy/policytest"
)

const (
	workdir = "/home/dev/src/app"
	runDir  = "/run/warden/harness"
	apiBase = "https://llm.example.com:8443/v1/"
)

// variants are the BridgeInput switches every golden file is rendered for.
var variants = []struct {
	name    string
	apiBase string
	key     bool
}{
	{name: "plain"},
	{name: "key", key: true},
	{name: "apibase", apiBase: apiBase},
	{name: "apibase-key", apiBase: apiBase, key: true},
}

func input(d *harness.Descriptor, apiBase string, key bool) *harness.BridgeInput {
	return &harness.BridgeInput{
		Workdir:      workdir,
		Home:         harness.HomeFor("/home/dev/.local/share/warden/homes", d.Name, workdir),
		RunDir:       runDir,
		Self:         "/run/warden/bin/warden",
		Config:       runDir + "/bridge.json",
		Briefing:     "# warden\n\nYou run in a sandbox. tools.deny: Bash(git push*).\n",
		APIBase:      apiBase,
		KeyAvailable: key,
	}
}

// render writes a bridge as one text: arguments, variables (sorted) and
// each file with its path and mode.
func render(b *harness.Bridge) string {
	var s strings.Builder
	fmt.Fprintf(&s, "args: %q\n", b.Args)
	s.WriteString("env:\n")
	for _, k := range slices.Sorted(maps.Keys(b.Env)) {
		fmt.Fprintf(&s, "  %s=%s\n", k, b.Env[k])
	}
	for _, f := range b.Files {
		fmt.Fprintf(&s, "\n=== %s (%04o)\n", f.Path, f.Mode)
		s.Write(f.Data)
		if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
			s.WriteString("\n\\ no newline at end of file\n")
		}
	}
	return s.String()
}

func TestBridgeGolden(t *testing.T) {
	t.Parallel()
	for _, d := range all.Harnesses() {
		for _, v := range variants {
			t.Run(d.Name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				b, err := d.Bridge(input(d, v.apiBase, v.key))
				if err != nil {
					t.Fatal(err)
				}
				policytest.Golden(t, filepath.Join("testdata", d.Name+"-"+v.name+".golden"), render(b))
			})
		}
	}
}

// TestBridgeInvariants checks what every bridge must satisfy whatever the
// harness: files are read-only, absolute, inside the managed home or the
// bridge's run directory, and unique; the hook command names the bridge
// configuration.
func TestBridgeInvariants(t *testing.T) {
	t.Parallel()
	for _, d := range all.Harnesses() {
		for _, v := range variants {
			t.Run(d.Name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				in := input(d, v.apiBase, v.key)
				b, err := d.Bridge(in)
				if err != nil {
					t.Fatal(err)
				}
				if len(b.Files) == 0 {
					t.Fatal("bridge has no files")
				}
				seen := map[string]bool{}
				hooked := false
				for _, f := range b.Files {
					if !filepath.IsAbs(f.Path) || filepath.Clean(f.Path) != f.Path {
						t.Errorf("file %q: want a clean absolute path", f.Path)
					}
					if !strings.HasPrefix(f.Path, in.Home+"/") && !strings.HasPrefix(f.Path, in.RunDir+"/") {
						t.Errorf("file %q is neither under the home %s nor the run dir %s", f.Path, in.Home, in.RunDir)
					}
					if f.Mode.Perm()&0o222 != 0 {
						t.Errorf("file %q mode %v is writable", f.Path, f.Mode)
					}
					if seen[f.Path] {
						t.Errorf("file %q written twice", f.Path)
					}
					seen[f.Path] = true
					if strings.Contains(string(f.Data), in.Config) && strings.Contains(string(f.Data), "__child") {
						hooked = true
					}
				}
				if !hooked {
					t.Error("no bridge file runs `warden __child hook ... CONFIG`")
				}
				if v.apiBase == "" {
					for _, f := range b.Files {
						if strings.Contains(string(f.Data), "llm.example.com") {
							t.Errorf("file %q names the API base without --api-base", f.Path)
						}
					}
				}
			})
		}
	}
}

func TestHarnesses(t *testing.T) {
	t.Parallel()
	ds := all.Harnesses()
	if len(ds) == 0 || ds[0].Name != all.Default {
		t.Fatalf("first harness is %v, want the default %q", ds, all.Default)
	}
	lower := regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	names := map[string]string{} // name or alias → harness
	for _, d := range ds {
		for _, n := range append([]string{d.Name}, d.Aliases...) {
			if !lower.MatchString(n) {
				t.Errorf("%s: name %q is not lower-case kebab (Lookup lower-cases its input)", d.Name, n)
			}
			if other, dup := names[n]; dup {
				t.Errorf("name %q is used by %s and %s", n, other, d.Name)
			}
			names[n] = d.Name
		}
	}
}

// TestDescriptors checks each descriptor's data for consistency.
func TestDescriptors(t *testing.T) {
	t.Parallel()
	placeholder := regexp.MustCompile(`\{[a-z]+\}`)
	for _, d := range all.Harnesses() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			if d.Title == "" || d.SandboxOff == "" || d.Bridge == nil {
				t.Error("Title, SandboxOff and Bridge are required")
			}
			if len(d.Binary.Names) == 0 || d.Binary.Package == "" {
				t.Error("Binary needs Names and Package")
			}
			if (d.Binary.Platform == "") == (d.Binary.Script == "") {
				t.Errorf("Binary wants exactly one of Platform (%q) and Script (%q)", d.Binary.Platform, d.Binary.Script)
			}
			for k, v := range d.Env {
				for _, p := range placeholder.FindAllString(v, -1) {
					if p != "{home}" && p != "{run}" && p != "{workdir}" {
						t.Errorf("Env %s=%q: unknown placeholder %s", k, v, p)
					}
				}
			}
			for _, k := range d.Keys {
				if !slices.Contains(d.APIHosts, k.Host) {
					t.Errorf("key %s is sent to %s, which is not in APIHosts %v", k.Secret, k.Host, d.APIHosts)
				}
				if k.Secret == "" || k.Env == "" {
					t.Errorf("key %+v needs Secret and Env", k)
				}
			}
			for _, s := range append(slices.Clone(d.Dirs), d.SkillDirs...) {
				if filepath.IsAbs(s) || strings.Contains(s, "..") {
					t.Errorf("dir %q must be relative to the home (or ~/)", s)
				}
			}
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	ds := all.Harnesses()
	tests := []struct {
		in   string
		want string
	}{
		{in: "opencode", want: "opencode"},
		{in: "oc", want: "opencode"},
		{in: "OC", want: "opencode"},
		{in: "claude-code", want: "claude-code"},
		{in: "claude", want: "claude-code"},
		{in: "cc", want: "claude-code"},
		{in: "Claude", want: "claude-code"},
		{in: "codex", want: "codex"},
		{in: "Gemini", want: "gemini"},
		{in: "cursor"},
		{in: ""},
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
}

func TestNames(t *testing.T) {
	t.Parallel()
	const want = "opencode (oc), claude-code (claude, cc), codex, gemini"
	if got := harness.Names(all.Harnesses()); got != want {
		t.Errorf("Names = %q, want %q", got, want)
	}
}
