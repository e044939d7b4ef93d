// Package policy is warden's normalised policy model: what a sandboxed command
// may read, write, reach on the network and see in its environment.
//
// The package is pure. Parsing turns YAML bytes into a [File]; [Merge] layers
// built-in defaults, user and project files, a selected profile and command-line
// flags into one [Spec] with provenance; [Resolve] provisions a Spec against a
// host view (paths made absolute and symlink-resolved, protected paths found)
// and yields a [Resolved] policy that the sandbox backends compile. All I/O goes
// through the [Host] interface supplied by the caller.
package policy
