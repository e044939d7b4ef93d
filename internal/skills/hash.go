package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HashPrefix starts every bundle hash.
const HashPrefix = "sha256:"

// BundleHash returns the bundle hash of the skill tree at dir:
//
//	for each included regular file, sorted by slash-separated relative path:
//	    relpath NUL hex(sha256(bytes)) NUL
//	hash = "sha256:" + hex(sha256(concatenation))
//
// Symlinks, devices, sockets and FIFOs are not hashed, and neither are VCS,
// virtualenv, cache, build and IDE directories or editor and OS junk files
// (see skipDir and skipFile). Skipped files are also left out of a
// [Snapshot], so what runs is exactly what was hashed.
//
// omac hashes the raw 32-byte file digests rather than their hex form, so
// the two tools print different hashes for the same tree.
func BundleHash(dir string) (string, error) {
	var items []hashItem
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("skills: bundle hash: %w", err)
		}
		if p == dir {
			if !d.IsDir() {
				return fmt.Errorf("skills: bundle hash: %s is not a directory", dir)
			}
			return nil
		}
		if d.IsDir() {
			if skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || skipFile(d.Name()) {
			return nil
		}
		rel, err := relSlash(dir, p)
		if err != nil {
			return err
		}
		f, err := openNoFollow(p)
		if err != nil {
			return fmt.Errorf("skills: bundle hash: %w", err)
		}
		defer f.Close()
		sum, err := hashFile(f, nil)
		if err != nil {
			return fmt.Errorf("skills: bundle hash: %s: %w", rel, err)
		}
		items = append(items, hashItem{rel, sum})
		return nil
	})
	if err != nil {
		return "", err
	}
	return sumItems(items), nil
}

type hashItem struct {
	rel string
	sum [sha256.Size]byte
}

func sumItems(items []hashItem) string {
	slices.SortFunc(items, func(a, b hashItem) int { return strings.Compare(a.rel, b.rel) })
	h := sha256.New()
	for _, it := range items {
		h.Write([]byte(it.rel))
		h.Write([]byte{0})
		h.Write([]byte(hex.EncodeToString(it.sum[:])))
		h.Write([]byte{0})
	}
	return HashPrefix + hex.EncodeToString(h.Sum(nil))
}

// hashFile hashes an open regular file, copying it to w if w is not nil.
func hashFile(f *os.File, w io.Writer) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	fi, err := f.Stat()
	if err != nil {
		return sum, err
	}
	if !fi.Mode().IsRegular() {
		return sum, fmt.Errorf("%w: %s changed type while being read", ErrSpecialFile, f.Name())
	}
	h := sha256.New()
	var dst io.Writer = h
	if w != nil {
		dst = io.MultiWriter(h, w)
	}
	if _, err := io.Copy(dst, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// skipDir reports whether a directory name is left out of bundles: VCS,
// virtualenvs, dependency and tool caches, build output and IDE state. The
// list is omac's, so bundles cover the same files.
func skipDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn",
		".venv", "venv", ".tox", "__pycache__",
		"node_modules",
		".cache", ".pytest_cache", ".mypy_cache", ".ruff_cache",
		"target", "dist", "build",
		".idea", ".vscode":
		return true
	}
	return false
}

// skipFile reports whether a file name is left out of bundles: OS junk,
// Python bytecode, editor swap and backup files.
func skipFile(name string) bool {
	switch name {
	case ".DS_Store", "Thumbs.db", ".gitignore.swp":
		return true
	}
	for _, suffix := range []string{".pyc", ".pyo", ".swp", "~"} {
		if strings.HasSuffix(name, suffix) && name != suffix {
			return true
		}
	}
	return false
}

func relSlash(root, p string) (string, error) {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return "", fmt.Errorf("skills: %w", err)
	}
	return filepath.ToSlash(rel), nil
}

// ValidHash reports whether s has the form "sha256:<64 lowercase hex>".
func ValidHash(s string) bool {
	h, ok := strings.CutPrefix(s, HashPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
