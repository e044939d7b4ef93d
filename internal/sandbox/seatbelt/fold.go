package seatbelt

import (
	"strings"

	"github.com/wardenhq/warden/internal/policy"
)

// gitNames are the names inside a git directory that policy protects
// (hooks/, config, worktrees/<name>/config.worktree), the directories
// that lead to them (modules/, worktrees/) and the git directory itself.
var gitNames = []string{".git", "hooks", "config", "config.worktree", "modules", "worktrees"}

// foldUnicode adds the two non-ASCII characters that Unicode case folding
// (which APFS applies on case-insensitive volumes) maps onto ASCII
// letters: U+017F LATIN SMALL LETTER LONG S folds to s, U+212A KELVIN SIGN
// to k. Without them .vſcode would alias .vscode. They reach the profile
// as UTF-8 inside a #"..." regex literal. Unverified on a Mac: if a macOS
// release rejects non-ASCII there, sandbox-exec refuses the whole profile
// (fail closed), and setting this to false is the fix.
const foldUnicode = true

// vocabulary returns the built-in path names that are case-folded in
// regexes: every component of policy's protected and secret lists. They
// are fixed strings compiled into warden, never host data.
func vocabulary() map[string]bool {
	v := map[string]bool{}
	for _, n := range gitNames {
		v[n] = true
	}
	for _, l := range [][]string{policy.ProtectedInRoots(), policy.ProtectedInHome(), policy.SecretsInHome()} {
		for _, e := range l {
			for c := range strings.SplitSeq(strings.Trim(e, "/"), "/") {
				if foldable(c) {
					v[c] = true
				}
			}
		}
	}
	return v
}

// foldable reports whether name can be turned into a regex by foldRegex:
// letters, digits and . _ - only, and not a relative-path element.
func foldable(name string) bool {
	if name == "" || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// foldRegex turns a slash-separated relative path of foldable names into
// a regex that matches it in any letter case.
func foldRegex(rel string) string {
	var b strings.Builder
	for i := 0; i < len(rel); i++ {
		c := rel[i]
		lc := c | 0x20
		switch {
		case foldUnicode && lc == 's':
			b.WriteString("(s|S|\u017f)")
		case foldUnicode && lc == 'k':
			b.WriteString("(k|K|\u212a)")
		case lc >= 'a' && lc <= 'z':
			b.WriteByte('[')
			b.WriteByte(lc)
			b.WriteByte(lc - 0x20)
			b.WriteByte(']')
		case c == '.':
			b.WriteString(`\.`)
		default: // digits, '_', '-', '/': literal in a regex outside brackets
			b.WriteByte(c)
		}
	}
	return b.String()
}
