package skills

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// SnapshotInfo describes a snapshot made by [Snapshot].
type SnapshotInfo struct {
	Dir  string // the snapshot directory
	Hash string // bundle hash of the bytes copied (and re-read from Dir)
	// Dropped lists symlinks left out because they are absolute or resolve
	// outside the tree, as slash-separated relative paths.
	Dropped []string
}

// Snapshot copies the skill tree at srcDir into a new read-only tree at
// dstDir, which must not exist: files become 0444 (0555 if the source had
// any execute bit), directories 0555. Files left out of the bundle hash are
// left out of the copy. Relative symlinks that resolve inside the tree are
// recreated as they are; absolute or escaping ones are dropped and listed.
// A device, socket or FIFO fails the snapshot with [ErrSpecialFile].
//
// The hash is computed over the bytes as they are copied, in the same walk,
// so a concurrent change to srcDir cannot make the snapshot differ from the
// hash it reports. The finished copy is hashed again from disk and must
// match. The copy is built beside dstDir and renamed into place, so dstDir
// either does not exist or is complete.
func Snapshot(srcDir, dstDir string) (SnapshotInfo, error) {
	if _, err := os.Lstat(dstDir); err == nil {
		return SnapshotInfo{}, fmt.Errorf("skills: snapshot: %s already exists", dstDir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return SnapshotInfo{}, fmt.Errorf("skills: snapshot: %w", err)
	}
	parent := filepath.Dir(dstDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return SnapshotInfo{}, fmt.Errorf("skills: snapshot: %w", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(parent, "."+filepath.Base(dstDir)+".tmp-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return SnapshotInfo{}, fmt.Errorf("skills: snapshot: %w", err)
	}
	info, err := copyTree(srcDir, tmp)
	if err == nil {
		err = freeze(tmp)
	}
	if err == nil {
		var again string
		if again, err = BundleHash(tmp); err == nil && again != info.Hash {
			err = fmt.Errorf("skills: snapshot: copy hashes to %s, source bytes to %s", again, info.Hash)
		}
	}
	if err == nil {
		err = os.Rename(tmp, dstDir)
	}
	if err != nil {
		_ = RemoveTree(tmp)
		return SnapshotInfo{}, err
	}
	// The top directory stays writable until it is in place: renaming a
	// read-only directory can fail.
	if err := os.Chmod(dstDir, 0o555); err != nil {
		_ = RemoveTree(dstDir)
		return SnapshotInfo{}, fmt.Errorf("skills: snapshot: %w", err)
	}
	info.Dir = dstDir
	return info, nil
}

type link struct{ rel, target string }

func copyTree(src, dst string) (SnapshotInfo, error) {
	var (
		items []hashItem
		links []link
	)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("skills: snapshot: %w", err)
		}
		if p == src {
			if !d.IsDir() {
				return fmt.Errorf("skills: snapshot: %s is not a directory", src)
			}
			return nil
		}
		rel, err := relSlash(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, filepath.FromSlash(rel))
		switch t := d.Type(); {
		case t.IsDir():
			if skipDir(d.Name()) {
				return fs.SkipDir
			}
			if err := os.Mkdir(out, 0o700); err != nil {
				return fmt.Errorf("skills: snapshot: %w", err)
			}
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("skills: snapshot: %w", err)
			}
			links = append(links, link{rel, target})
		case t.IsRegular():
			if skipFile(d.Name()) {
				return nil
			}
			sum, err := copyFile(p, out)
			if err != nil {
				return fmt.Errorf("skills: snapshot: %s: %w", rel, err)
			}
			items = append(items, hashItem{rel, sum})
		default:
			return fmt.Errorf("%w: %s (%v)", ErrSpecialFile, rel, t)
		}
		return nil
	})
	if err != nil {
		return SnapshotInfo{}, err
	}
	info := SnapshotInfo{Hash: sumItems(items)}
	targets := make(map[string]string, len(links))
	for _, l := range links {
		targets[l.rel] = l.target
	}
	for _, l := range links {
		if !linkInTree(l.rel, targets) {
			info.Dropped = append(info.Dropped, l.rel)
			continue
		}
		if err := os.Symlink(l.target, filepath.Join(dst, filepath.FromSlash(l.rel))); err != nil {
			return SnapshotInfo{}, fmt.Errorf("skills: snapshot: %w", err)
		}
	}
	slices.Sort(info.Dropped)
	return info, nil
}

// copyFile copies one regular file, opened without following symlinks, and
// returns the SHA-256 of the bytes copied.
func copyFile(src, dst string) (sum [32]byte, err error) {
	in, err := openNoFollow(src)
	if err != nil {
		return sum, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return sum, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: a new file in the snapshot being built
	if err != nil {
		return sum, err
	}
	sum, err = hashFile(in, out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sum, err
	}
	mode := os.FileMode(0o444)
	if fi.Mode().Perm()&0o111 != 0 {
		mode = 0o555
	}
	return sum, os.Chmod(dst, mode)
}

// linkInTree reports whether the symlink at rel resolves, following the
// tree's other symlinks, to a path inside the tree. Resolution is done on
// the recorded link targets, not the live filesystem: "a/.." where a -> "."
// climbs out even though the text looks harmless.
func linkInTree(rel string, targets map[string]string) bool {
	target := targets[rel]
	if target == "" || path.IsAbs(filepath.ToSlash(target)) || filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
		return false
	}
	stack := strings.Split(path.Dir(rel), "/")
	if path.Dir(rel) == "." {
		stack = nil
	}
	queue := strings.Split(filepath.ToSlash(target), "/")
	for hops := 0; len(queue) > 0; {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return false
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, c)
		t, ok := targets[strings.Join(stack, "/")]
		if !ok {
			continue
		}
		if hops++; hops > 40 || t == "" || path.IsAbs(filepath.ToSlash(t)) || filepath.IsAbs(t) {
			return false
		}
		stack = stack[:len(stack)-1]
		queue = append(strings.Split(filepath.ToSlash(t), "/"), queue...)
	}
	return true
}

// freeze makes every directory below root 0555, deepest first. Files were
// made read-only as they were copied; root itself is left to the caller.
func freeze(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("skills: snapshot: %w", err)
	}
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d, 0o555); err != nil {
			return fmt.Errorf("skills: snapshot: %w", err)
		}
	}
	return nil
}

// RemoveTree deletes a tree made read-only by [Snapshot]: it restores
// owner write permission on each directory first.
func RemoveTree(root string) error {
	// Chmod through an os.Root so a symlink swapped in during the walk
	// cannot redirect it outside the tree.
	if r, err := os.OpenRoot(root); err == nil {
		_ = r.Chmod(".", 0o700)
		_ = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = r.Chmod(p, 0o700)
			}
			return nil
		})
		r.Close()
	}
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("skills: remove %s: %w", root, err)
	}
	return nil
}
