// Package reexec dispatches warden's hidden child verbs (`warden __child
// <kind>`) before any flag parsing, so that irreversible restrictions are
// applied in a fresh process image of warden itself.
package reexec

import (
	"fmt"
	"os"
)

// Verb is the reserved first argument of a hidden child.
const Verb = "__child"

var registry = map[string]func() int{}

// Register adds a child kind. It panics on a duplicate (a programmer error).
func Register(kind string, fn func() int) {
	if _, dup := registry[kind]; dup {
		panic("reexec: duplicate child kind " + kind)
	}
	registry[kind] = fn
}

// Dispatch runs the child named by os.Args and exits if os.Args names one;
// otherwise it returns and the normal CLI runs.
func Dispatch() {
	if len(os.Args) < 2 || os.Args[1] != Verb {
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "warden: __child needs a kind")
		os.Exit(125)
	}
	fn, ok := registry[os.Args[2]]
	if !ok {
		fmt.Fprintf(os.Stderr, "warden: unknown child kind %q\n", os.Args[2])
		os.Exit(125)
	}
	os.Exit(fn())
}
