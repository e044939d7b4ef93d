package sandbox

import (
	"strings"

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
	// InnerEgressSocket is where the egress proxy's Unix socket is bound.
	InnerEgressSocket = "/run/warden/egress.sock"
	// InnerCABundle is the CA bundle (system roots + warden's interception
	// CA) when interception is on.
	InnerCABundle = "/run/warden/ca-bundle.pem"
	// InnerProxyAddr is the in-sandbox loopback address PID 1 serves and
	// relays to the egress socket.
	InnerProxyAddr = "127.0.0.1:3128"
)

// Expose is a Unix socket PID 1 listens on inside the sandbox (in a
// directory bound in from the host, so the host can connect to it), whose
// connections it relays to a TCP address inside the sandbox's network
// namespace: the way in to a server in an empty namespace (a sandboxed
// sidecar).
type Expose struct {
	Unix string `json:"unix"`
	TCP  string `json:"tcp"`
}

// Bind is a runner-prepared host path made visible inside the sandbox.
type Bind struct {
	Src, Dst string
	RW       bool
}

// Relay is a loopback TCP listener inside the sandbox whose connections
// PID 1 relays to a Unix socket bound in from the host.
type Relay struct {
	Listen string `json:"listen"`
	Unix   string `json:"unix"`
}

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
	// RuntimeDir is the session's 0700 host directory, when the launcher
	// made one (it holds the bridges' sockets); otherwise the runner makes
	// its own.
	RuntimeDir string
	// Binds, Relays and Env are what the launcher's bridges need: extra
	// paths in the view, PID 1's loopback relays, and variables added to
	// the target's environment.
	Binds  []Bind
	Relays []Relay
	Env    []string
	// Exposes are PID 1's relays into the sandbox (see Expose).
	Exposes []Expose
	// Dir, when set, is where the target starts instead of the workdir
	// (it must be visible in the sandbox).
	Dir string
	// TTY says the target's stdin is a pty warden allocated: the target
	// becomes a session leader with it as controlling terminal (job
	// control, SIGWINCH).
	TTY bool
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
	// Relays are served by PID 1 for the session's lifetime.
	Relays []Relay `json:"relays,omitempty"`
	// Exposes are served by PID 1 for the session's lifetime.
	Exposes []Expose `json:"exposes,omitempty"`
	// TTY makes the target a session leader whose controlling terminal
	// is its stdin.
	TTY bool `json:"tty,omitempty"`
}

// ChildFD is the descriptor number the child reads its ChildConfig from.
const ChildFD = 3

// MergeEnv returns base with extra's variables added or replaced.
func MergeEnv(base, extra []string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	names := map[string]bool{}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// StartDir is where the target starts: Dir, or the policy's workdir.
func (s *Spec) StartDir() string {
	if s.Dir != "" {
		return s.Dir
	}
	return s.Policy.Workdir
}
