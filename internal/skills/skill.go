package skills

import (
	"fmt"
	"os"
	"path/filepath"
)

// Skill is a parsed skill directory.
type Skill struct {
	Dir          string
	Frontmatter  *Frontmatter
	Manifest     *Manifest
	ManifestPath string
}

// maxSkillMD bounds SKILL.md.
const maxSkillMD = 1 << 20

// LoadSkill parses and cross-checks the skill in dir: SKILL.md's name must
// equal the directory name, and the manifest's name must equal both.
func LoadSkill(dir string) (*Skill, error) {
	return loadSkill(dir, filepath.Base(dir))
}

// loadSkill is LoadSkill with the expected name given, for snapshots whose
// directory is named after the hash.
func loadSkill(dir, name string) (*Skill, error) {
	p := filepath.Join(dir, SkillFile)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("skills: %s is not a regular file", p)
	}
	data, err := readLimited(p, maxSkillMD)
	if err != nil {
		return nil, err
	}
	fm, err := ParseFrontmatter(p, data, name)
	if err != nil {
		return nil, err
	}
	m, mp, err := LoadManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Name != fm.Name {
		return nil, &ParseError{File: mp, Line: 0, Field: "name", Msg: fmt.Sprintf("%q must equal the SKILL.md name %q", m.Name, fm.Name)}
	}
	return &Skill{Dir: dir, Frontmatter: fm, Manifest: m, ManifestPath: mp}, nil
}
