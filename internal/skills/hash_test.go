package skills_test

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/skills"
)

var update = flag.Bool("update", false, "rewrite golden files")

const testSkill = "testdata/skills/echo-test"

func TestBundleHashGolden(t *testing.T) {
	t.Parallel()
	got, err := skills.BundleHash(testSkill)
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/echo-test.hash"
	if *update {
		if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != strings.TrimSpace(string(want)) {
		t.Fatalf("BundleHash = %s, golden %s", got, want)
	}
	if !skills.ValidHash(got) {
		t.Fatalf("ValidHash(%q) = false", got)
	}
}

// copyTree copies the test skill into a fresh temp dir.
func copySkill(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(testSkill, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(testSkill, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		return os.WriteFile(out, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	if name != "echo-test" {
		for _, f := range []string{"SKILL.md", "omac.yaml"} {
			p := filepath.Join(dst, f)
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "echo-test", name)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

func TestBundleHashSkips(t *testing.T) {
	t.Parallel()
	dir := copySkill(t, "echo-test")
	base, err := skills.BundleHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	// None of these change the hash.
	for _, rel := range []string{
		".git/HEAD", "node_modules/x/index.js", "__pycache__/a.pyc", "venv/bin/python", ".venv/x",
		"scripts/build/out", "dist/a", "target/a", ".idea/x", ".vscode/x", ".cache/x", ".mypy_cache/x",
		".DS_Store", "scripts/x.pyc", "scripts/.run.sh.swp", "SKILL.md~", "Thumbs.db",
	} {
		write(t, dir, rel, "junk")
	}
	if err := os.Symlink("scripts/run.sh", filepath.Join(dir, "link.sh")); err != nil {
		t.Fatal(err)
	}
	if got, _ := skills.BundleHash(dir); got != base {
		t.Fatalf("skipped files changed the hash: %s != %s", got, base)
	}
	// These do.
	for _, rel := range []string{"scripts/run.sh", "new.txt", "build.sh", "references/.hidden"} {
		write(t, dir, rel, "changed")
		got, _ := skills.BundleHash(dir)
		if got == base {
			t.Fatalf("writing %s did not change the hash", rel)
		}
		base = got
	}
	// Renaming a file changes it too: the path is hashed.
	if err := os.Rename(filepath.Join(dir, "new.txt"), filepath.Join(dir, "new2.txt")); err != nil {
		t.Fatal(err)
	}
	if got, _ := skills.BundleHash(dir); got == base {
		t.Fatal("a rename did not change the hash")
	}
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	src := copySkill(t, "echo-test")
	// In-tree symlinks survive; escaping ones are dropped.
	links := map[string]string{
		"run-link.sh":           "scripts/run.sh",
		"references/up.md":      "../SKILL.md",
		"scripts/dir-link":      "../references",
		"escape-abs":            "/etc/passwd",
		"escape-rel":            "../../../etc/passwd",
		"references/escape-two": "../../outside",
		"dot":                   ".",
		"via-dot":               "dot/..", // "." then ".." climbs out
		"loop-a":                "loop-b",
		"loop-b":                "loop-a",
		"chain":                 "escape-rel",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(src, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	want, err := skills.BundleHash(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(snapParent(t), "snap", "x")
	info, err := skills.Snapshot(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if info.Hash != want || info.Dir != dst {
		t.Fatalf("Snapshot = %+v, want hash %s", info, want)
	}
	if got, _ := skills.BundleHash(dst); got != want {
		t.Fatalf("snapshot hashes to %s, want %s", got, want)
	}
	wantDropped := []string{"chain", "escape-abs", "escape-rel", "loop-a", "loop-b", "references/escape-two", "via-dot"}
	if diff := cmp.Diff(wantDropped, info.Dropped); diff != "" {
		t.Fatalf("Dropped (-want +got):\n%s", diff)
	}
	for name, target := range links {
		got, err := os.Readlink(filepath.Join(dst, filepath.FromSlash(name)))
		kept := !contains(wantDropped, name)
		switch {
		case kept && (err != nil || got != target):
			t.Errorf("link %s = %q, %v; want %q", name, got, err, target)
		case !kept && err == nil:
			t.Errorf("escaping link %s was recreated", name)
		}
	}
	// Modes: files 0444 (0555 if executable), dirs 0555.
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var wantMode fs.FileMode
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil
		case fi.IsDir():
			wantMode = 0o555
		case strings.HasSuffix(p, "run.sh"):
			wantMode = 0o555
		default:
			wantMode = 0o444
		}
		if fi.Mode().Perm() != wantMode {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), wantMode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The destination must not exist already.
	if _, err := skills.Snapshot(src, dst); err == nil {
		t.Fatal("Snapshot overwrote an existing snapshot")
	}
	if err := skills.RemoveTree(dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("RemoveTree left %s: %v", dst, err)
	}
}

// snapParent returns a temp dir for snapshots that is cleaned up even
// though snapshots are read-only (t.TempDir's cleanup cannot remove 0555
// dirs as a non-root user).
func snapParent(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	t.Cleanup(func() { _ = skills.RemoveTree(d) })
	return d
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

func TestSnapshotSkipsExcluded(t *testing.T) {
	t.Parallel()
	src := copySkill(t, "echo-test")
	write(t, src, "node_modules/evil/index.js", "unhashed code")
	write(t, src, "scripts/__pycache__/run.cpython-312.pyc", "bytecode")
	dst := filepath.Join(snapParent(t), "s")
	if _, err := skills.Snapshot(src, dst); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"node_modules", "scripts/__pycache__"} {
		if _, err := os.Lstat(filepath.Join(dst, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("unhashed %s was copied into the snapshot", rel)
		}
	}
}
