// Package launch is the composition root for one sandboxed session: it
// loads and resolves the policy, picks the backend and runs the target.
// Both `warden run` and (later) `warden start` use it.
package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/bwrap"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// Options describe one launch.
type Options struct {
	Config config.Options
	Argv   []string
	Host   policy.Host // nil: the real machine
	Logger *slog.Logger
}

// Plan is a resolved, compiled launch that has not run yet.
type Plan struct {
	Spec     *policy.Spec
	Resolved *policy.Resolved
	Sandbox  *sandbox.Spec
	Backend  policy.Backend
}

// PolicyError marks an error in the policy (as opposed to the machine).
type PolicyError struct{ Err error }

func (e *PolicyError) Error() string { return e.Err.Error() }
func (e *PolicyError) Unwrap() error { return e.Err }

// NewPlan loads, merges and resolves the policy for argv.
func NewPlan(o Options) (*Plan, error) {
	spec, err := config.Load(o.Config)
	if err != nil {
		return nil, &PolicyError{Err: err}
	}
	h := o.Host
	if h == nil {
		oh, err := config.NewOSHost()
		if err != nil {
			return nil, err
		}
		h = oh
	}
	res, err := policy.Resolve(spec, h, policy.ResolveOptions{})
	if err != nil {
		return nil, &PolicyError{Err: err}
	}
	backend := res.Backend
	switch backend {
	case policy.BackendAuto, policy.BackendBwrap:
		backend = policy.BackendBwrap
	default:
		return nil, &PolicyError{Err: &policy.ValidationError{Field: "backend", Source: joinSources(spec, "backend"), Msg: fmt.Sprintf("backend %q is not available in this build", backend)}}
	}
	self, err := Self()
	if err != nil {
		return nil, err
	}
	ll, err := landlock.Compile(res, landlock.Options{InSandbox: true, SelfPath: sandbox.InnerSelf, ScratchPath: sandbox.InnerScratch})
	if err != nil {
		return nil, err
	}
	return &Plan{
		Spec:     spec,
		Resolved: res,
		Backend:  backend,
		Sandbox: &sandbox.Spec{
			Policy: res, Argv: o.Argv, Self: self,
			Landlock: ll,
			// The network namespace already confines UDP and raw sockets.
			Seccomp: &seccomp.Config{AllowUnix: false, DenyInet: false},
		},
	}, nil
}

func joinSources(s *policy.Spec, field string) string {
	out := ""
	for i, src := range s.Sources[field] {
		if i > 0 {
			out += ", "
		}
		out += src
	}
	return out
}

// Self is the absolute, symlink-resolved path of the running warden binary,
// which is re-executed inside the sandbox. WARDEN_SELF overrides it for
// tests that drive the launcher from a test binary.
func Self() (string, error) {
	if p := os.Getenv("WARDEN_SELF"); p != "" {
		return filepath.EvalSymlinks(p)
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("launch: locate warden binary: %w", err)
	}
	return filepath.EvalSymlinks(p)
}

// Run executes the plan and returns the target's exit code.
func (p *Plan) Run(ctx context.Context, r *bwrap.Runner) (int, error) {
	if p.Backend != policy.BackendBwrap {
		return 125, errors.New("launch: no runner for backend " + string(p.Backend))
	}
	return r.Run(ctx, p.Sandbox)
}
