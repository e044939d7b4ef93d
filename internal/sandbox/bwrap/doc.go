// Package bwrap compiles a resolved policy into bubblewrap arguments (pure,
// golden-tested on every OS) and runs it (Linux only).
package bwrap
