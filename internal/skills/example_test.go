package skills_test

import (
	"os"
	"testing"

	"github.com/wardenhq/warden/internal/skills"
)

// TestExampleSkill keeps examples/skills/echo valid.
func TestExampleSkill(t *testing.T) {
	t.Parallel()
	const dir = "../../examples/skills/echo"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("example skill not present: %v", err)
	}
	sk, err := skills.LoadSkill(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := sk.Manifest.Sidecar
	if sk.Frontmatter.Name != "echo" || sc == nil || sc.Mount != "echo" {
		t.Fatalf("unexpected example: %+v %+v", sk.Frontmatter, sc)
	}
	if got := sc.ExpandCommand(func(string) (string, bool) { return "", false }); len(got) != 1 || got[0] != "./sidecar/echo-sidecar" {
		t.Fatalf("command = %v", got)
	}
	if _, err := skills.EffectiveConfig(sk.Manifest, nil, nil); err != nil {
		t.Fatal(err)
	}
}
