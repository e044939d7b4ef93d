package skills_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/skills"
)

func TestRoots(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"opencode":    {"/w/.agents/skills", "/w/.opencode/skills", "/h/.config/agents/skills", "/h/.config/opencode/skills"},
		"claude-code": {"/w/.agents/skills", "/w/.claude/skills", "/h/.config/agents/skills", "/h/.claude/skills"},
		"codex":       {"/w/.agents/skills", "/w/.codex/skills", "/h/.config/agents/skills", "/h/.codex/skills"},
		"gemini":      {"/w/.agents/skills", "/w/.gemini/skills", "/h/.config/agents/skills", "/h/.gemini/skills"},
	}
	for h, dirs := range want {
		roots, err := skills.Roots("/w", "/h", h)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range roots {
			got = append(got, filepath.ToSlash(r.Dir))
		}
		if diff := cmp.Diff(dirs, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", h, diff)
		}
		if roots[0].Scope != skills.ScopeWorkdir || roots[3].Scope != skills.ScopeUser || !roots[0].Shared || roots[1].Shared {
			t.Errorf("%s: scopes wrong: %+v", h, roots)
		}
	}
	if _, err := skills.Roots("/w", "/h", "copilot"); err == nil {
		t.Error("unknown harness accepted")
	}
	if _, err := skills.Roots("w", "/h", "codex"); err == nil {
		t.Error("relative workdir accepted")
	}
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wd, home := filepath.Join(root, "w"), filepath.Join(root, "h")
	sk := func(dir string) {
		write(t, dir, "SKILL.md", "---\nname: x\ndescription: d\n---\n")
	}
	sk(filepath.Join(wd, ".agents/skills/a"))
	sk(filepath.Join(wd, ".opencode/skills/a")) // shadowed by .agents
	sk(filepath.Join(wd, ".opencode/skills/b"))
	sk(filepath.Join(home, ".config/opencode/skills/b")) // shadowed by workdir
	sk(filepath.Join(home, ".config/opencode/skills/c"))
	sk(filepath.Join(home, ".config/agents/skills/d"))
	sk(filepath.Join(wd, ".claude/skills/e")) // another harness: never seen
	sk(filepath.Join(home, ".claude/skills/f"))
	write(t, filepath.Join(wd, ".opencode/skills/no-skill-md"), "README.md", "x")
	write(t, filepath.Join(wd, ".opencode/skills"), "file", "x")
	if err := os.Symlink(filepath.Join(home, ".config/opencode/skills/c"), filepath.Join(wd, ".opencode/skills/g")); err != nil {
		t.Fatal(err)
	}

	found, err := skills.Discover(wd, home, "opencode")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, Dir string
		Scope     skills.Scope
		Shadowed  []string
	}
	var got []row
	for _, f := range found {
		rel, _ := filepath.Rel(root, f.Dir)
		var sh []string
		for _, s := range f.Shadowed {
			r, _ := filepath.Rel(root, s)
			sh = append(sh, filepath.ToSlash(r))
		}
		got = append(got, row{f.Name, filepath.ToSlash(rel), f.Root.Scope, sh})
	}
	want := []row{
		{"a", "w/.agents/skills/a", skills.ScopeWorkdir, []string{"w/.opencode/skills/a"}},
		{"b", "w/.opencode/skills/b", skills.ScopeWorkdir, []string{"h/.config/opencode/skills/b"}},
		{"g", "w/.opencode/skills/g", skills.ScopeWorkdir, nil},
		{"d", "h/.config/agents/skills/d", skills.ScopeUser, nil},
		{"c", "h/.config/opencode/skills/c", skills.ScopeUser, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
