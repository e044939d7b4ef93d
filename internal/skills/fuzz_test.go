package skills_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/skills"
)

// The seed corpora live in testdata/fuzz/<FuzzName>; plain `go test` runs
// every seed as a unit test.

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte("name: echo\nsidecar:\n  command: [./run, \"${SIDECAR_PORT}\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := skills.ParseManifest("omac.yaml", data)
		if err != nil {
			_, ok := errors.AsType[*skills.ParseError](err)
			if !ok {
				t.Fatalf("error %T is not a *ParseError: %v", err, err)
			}
			if m != nil {
				t.Fatal("manifest and error both returned")
			}
			return
		}
		if !skills.ValidName(m.Name) {
			t.Fatalf("accepted invalid name %q", m.Name)
		}
		sc := m.Sidecar
		if sc == nil {
			return
		}
		if len(sc.Command) == 0 || sc.Command[0] == "" || sc.Mount == "" || sc.Health.Path == "" {
			t.Fatalf("accepted sidecar without command, mount or health path: %+v", sc)
		}
		for _, c := range sc.Config {
			if c.Default == nil {
				continue
			}
			if err := skills.CheckConfig(m, map[string]string{c.Name: *c.Default}); err != nil {
				t.Fatalf("accepted a default that does not validate: %v", err)
			}
		}
		_ = sc.ExpandCommand(func(string) (string, bool) { return "", false })
	})
}

func FuzzParseFrontmatter(f *testing.F) {
	f.Add([]byte("---\nname: pdf\ndescription: Read PDFs.\n---\nbody\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, err := skills.ParseFrontmatter("SKILL.md", data, "")
		if err != nil {
			_, ok := errors.AsType[*skills.ParseError](err)
			if !ok {
				t.Fatalf("error %T is not a *ParseError: %v", err, err)
			}
			return
		}
		if !skills.ValidName(fm.Name) || strings.TrimSpace(fm.Description) == "" {
			t.Fatalf("accepted invalid frontmatter %+v", fm)
		}
	})
}
