//go:build !linux

package landlock

import "errors"

// ABI reports that Landlock is Linux-only.
func ABI() (int, error) { return 0, errors.New("landlock: Linux only") }

// Apply fails: Landlock is Linux-only.
func Apply(*Ruleset) error { return errors.New("landlock: Linux only") }
