package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Harness names.
const (
	HarnessOpenCode   = "opencode"
	HarnessClaudeCode = "claude-code"
	HarnessCodex      = "codex"
	HarnessGemini     = "gemini"
)

// Scope says where a skill root lives.
type Scope string

// Scopes.
const (
	ScopeWorkdir Scope = "workdir" // inside the project
	ScopeUser    Scope = "user"    // in the user's home, for every project
)

// harnessDirs maps a harness to its workdir-relative and home-relative
// skill roots.
var harnessDirs = map[string][2]string{
	HarnessOpenCode:   {".opencode/skills", ".config/opencode/skills"},
	HarnessClaudeCode: {".claude/skills", ".claude/skills"},
	HarnessCodex:      {".codex/skills", ".codex/skills"},
	HarnessGemini:     {".gemini/skills", ".gemini/skills"},
}

// Shared roots that every harness reads.
const (
	sharedWorkdirDir = ".agents/skills"
	sharedHomeDir    = ".config/agents/skills"
)

// Harnesses returns the known harness names, sorted.
func Harnesses() []string {
	return slices.Sorted(maps.Keys(harnessDirs))
}

// Root is a directory that may hold skills.
type Root struct {
	Dir    string `json:"dir"`
	Scope  Scope  `json:"scope"`
	Shared bool   `json:"shared"` // the .agents root every harness reads
}

// Roots returns the skill roots of harness in precedence order: workdir
// before user-global and, within each, the shared .agents root before the
// harness's own. Another harness's roots are never included. workdir and
// home must be absolute; an empty one is left out.
func Roots(workdir, home, harness string) ([]Root, error) {
	dirs, ok := harnessDirs[harness]
	if !ok {
		return nil, fmt.Errorf("skills: unknown harness %q (want one of %v)", harness, Harnesses())
	}
	var roots []Root
	for _, b := range []struct {
		base   string
		scope  Scope
		shared string
		own    string
	}{
		{workdir, ScopeWorkdir, sharedWorkdirDir, dirs[0]},
		{home, ScopeUser, sharedHomeDir, dirs[1]},
	} {
		if b.base == "" {
			continue
		}
		if !filepath.IsAbs(b.base) {
			return nil, fmt.Errorf("skills: %s dir %q is not absolute", b.scope, b.base)
		}
		roots = append(roots,
			Root{Dir: filepath.Join(b.base, filepath.FromSlash(b.shared)), Scope: b.scope, Shared: true},
			Root{Dir: filepath.Join(b.base, filepath.FromSlash(b.own)), Scope: b.scope},
		)
	}
	return roots, nil
}

// Found is a skill directory found by [Discover].
type Found struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	Root Root   `json:"root"`
	// Shadowed lists same-named skill dirs in lower-precedence roots.
	Shadowed []string `json:"shadowed,omitempty"`
}

// Discover lists the skill directories visible to harness: each
// subdirectory of a root that holds SKILL.md, first root wins per name.
// Missing roots are skipped. Discovery only finds candidates; nothing runs
// unless it is registered and approved.
func Discover(workdir, home, harness string) ([]Found, error) {
	roots, err := Roots(workdir, home, harness)
	if err != nil {
		return nil, err
	}
	var out []Found
	index := map[string]int{}
	for _, r := range roots {
		ents, err := os.ReadDir(r.Dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("skills: discover: %w", err)
		}
		for _, e := range ents {
			dir := filepath.Join(r.Dir, e.Name())
			fi, err := os.Stat(dir) // a symlinked skill dir counts
			if err != nil || !fi.IsDir() {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, SkillFile)); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if i, ok := index[e.Name()]; ok {
				out[i].Shadowed = append(out[i].Shadowed, dir)
				continue
			}
			index[e.Name()] = len(out)
			out = append(out, Found{Name: e.Name(), Dir: dir, Root: r})
		}
	}
	return out, nil
}
