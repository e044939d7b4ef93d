// Package sandbox holds what every backend shares: the launch Spec, the
// in-sandbox paths warden uses, and the configuration handed to the
// re-executed child over a pipe.
package sandbox
