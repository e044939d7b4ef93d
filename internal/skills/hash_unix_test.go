//go:build unix

package skills_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/skills"
)

func TestSnapshotRefusesSpecialFiles(t *testing.T) {
	t.Parallel()
	src := copySkill(t, "echo-test")
	if err := unix.Mkfifo(filepath.Join(src, "scripts", "pipe"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	dstParent := snapParent(t)
	_, err := skills.Snapshot(src, filepath.Join(dstParent, "s"))
	if !errors.Is(err, skills.ErrSpecialFile) {
		t.Fatalf("Snapshot = %v, want ErrSpecialFile", err)
	}
	ents, _ := os.ReadDir(dstParent)
	if len(ents) != 0 {
		t.Fatalf("failed snapshot left %v behind", ents)
	}
}
