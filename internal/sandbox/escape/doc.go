// Package escape holds warden's adversarial suite: one test row per
// technique in threats.md classes A–D and F, run against the real sandbox
// under every Linux backend (make test-escape). It has no non-test code.
package escape
