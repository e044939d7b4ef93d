package sandbox

import (
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// Paths inside every sandbox.
const (
	// InnerSelf is where the warden binary is bound, read-only.
	InnerSelf = "/run/warden/warden"
	// InnerScratch is the fresh writable directory used with
	// start_in_scratch.
	InnerScratch = "/scratch"
)

// Spec is one launch: a resolved policy plus what the runner prepared.
type Spec struct {
	Policy *policy.Resolved
	// Argv is the target command; Argv[0] is looked up on the sandbox PATH.
	Argv []string
	// Self is the host path of the warden binary to re-execute inside.
	Self string
	// DenyFile is a host path to an empty, mode-0000 file used to mask
	// unreadable files.
	DenyFile string
	// Landlock and Seccomp are the layers the exec stage applies; nil
	// means the layer is off (only where the policy allows it).
	Landlock *landlock.Ruleset
	Seccomp  *seccomp.Config
}

// ChildConfig is what the runner sends to `warden __child init` on fd 3.
// It never travels in argv, because it carries the environment.
type ChildConfig struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Limits are applied as rlimits just before the target starts.
	Limits policy.Limits `json:"limits"`
	// Landlock and Seccomp are applied, in that order, after
	// no_new_privs and before the target is executed.
	Landlock *landlock.Ruleset `json:"landlock,omitempty"`
	Seccomp  *seccomp.Config   `json:"seccomp,omitempty"`
}

// ChildFD is the descriptor number the child reads its ChildConfig from.
const ChildFD = 3
