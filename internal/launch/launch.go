// Package launch is the composition root for one sandboxed session: it
// loads and resolves the policy, picks the backend and runs the target.
// Both `warden run` and (later) `warden start` use it.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress/prompt"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/bwrap"
	"github.com/wardenhq/warden/internal/sandbox/hostrun"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/sandbox/pty"
	"github.com/wardenhq/warden/internal/sandbox/seatbelt"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
	"github.com/wardenhq/warden/internal/skills"
)

// Options describe one launch.
type Options struct {
	Config config.Options
	Argv   []string
	// Skills are registered skills to mount (--skill), added to the
	// policy's skills:; "all" mounts every registered skill.
	Skills []string
	Host   policy.Host // nil: the real machine
	Logger *slog.Logger
}

// Plan is a resolved, compiled launch that has not run yet.
type Plan struct {
	// Logger receives the session's components' logs.
	Logger *slog.Logger
	// Skills are the registered skills the session mounts.
	Skills []string
	// Notice is printed on every run when set (a fallback backend, or
	// backend none).
	Notice   string
	Spec     *policy.Spec
	Resolved *policy.Resolved
	Sandbox  *sandbox.Spec
	Backend  policy.Backend
	// Harness is set by `warden start`.
	Harness *HarnessPlan

	// store is warden's secret store, opened at most once per session
	// (the encrypted-file keyring's key derivation is slow on purpose).
	storeOnce sync.Once
	store     secrets.Store
	storeErr  error

	// approved are the Skills, resolved once (by `warden start`, which
	// places them); nil until then.
	approved []skills.Approved

	// tty is the pty handed to the sandbox, once there is one: network
	// prompts borrow the terminal through it.
	tty atomic.Pointer[pty.Session]
}

// promptTTY is the terminal network prompts use: the session's own pty
// when warden hands one to the sandbox (keystrokes then cannot reach the
// sandbox while warden asks), else /dev/tty.
func (p *Plan) promptTTY() (io.ReadWriteCloser, error) {
	if s := p.tty.Load(); s != nil {
		return s.Prompt()
	}
	return prompt.OpenTTY()
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
	res, err := policy.Resolve(spec, h, policy.ResolveOptions{NetworkFiltered: true})
	if err != nil {
		return nil, &PolicyError{Err: err}
	}
	backend, notice, err := chooseBackend(res)
	if err != nil {
		return nil, err
	}
	self, err := Self()
	if err != nil {
		return nil, err
	}
	sb := &sandbox.Spec{Policy: res, Argv: o.Argv, Self: self}
	sb.Landlock, sb.Seccomp, err = Layers(res, backend)
	if backend == policy.BackendNone {
		notice = "backend none: NO SANDBOX; only the environment filter, rlimits and no_new_privs apply (the policy asked for it explicitly)"
	}
	if err != nil {
		return nil, &PolicyError{Err: fmt.Errorf("backend %s cannot enforce this policy: %w", backend, err)}
	}
	plan := &Plan{Spec: spec, Resolved: res, Backend: backend, Sandbox: sb, Notice: notice, Logger: o.Logger}
	for _, s := range append(slices.Clone(res.Skills), o.Skills...) {
		if !slices.Contains(plan.Skills, s) {
			plan.Skills = append(plan.Skills, s)
		}
	}
	return plan, nil
}

// Layers compiles the Landlock ruleset and picks the seccomp filter that
// backend applies for the policy (pure; golden-tested per policy).
func Layers(res *policy.Resolved, backend policy.Backend) (*landlock.Ruleset, *seccomp.Config, error) {
	switch backend {
	case policy.BackendBwrap:
		ll, err := landlock.Compile(res, landlock.Options{InSandbox: true, SelfPath: sandbox.InnerSelf, ScratchPath: sandbox.InnerScratch})
		// The network and IPC namespaces already confine UDP, raw
		// sockets and System V IPC.
		return ll, &seccomp.Config{AllowUnix: len(res.UnixSockets) > 0}, err
	case policy.BackendLandlock:
		ll, err := landlock.Compile(res, landlock.Options{})
		// No network namespace: only TCP, which Landlock confines, is
		// left. No IPC namespace: System V IPC would be shared with the
		// host.
		return ll, &seccomp.Config{AllowUnix: len(res.UnixSockets) > 0, DenyInet: res.Network.Mode != policy.NetOpen, DenySysVIPC: true}, err
	case policy.BackendAuto, policy.BackendNone, policy.BackendSeatbelt:
	}
	return nil, nil, nil
}

// chooseBackend resolves `auto` from a probe of the machine. A fallback is
// never silent: it comes with a notice.
func chooseBackend(res *policy.Resolved) (policy.Backend, string, error) {
	switch res.Backend {
	case policy.BackendBwrap, policy.BackendLandlock, policy.BackendSeatbelt, policy.BackendNone:
		return res.Backend, "", nil
	case policy.BackendAuto:
	}
	p := sandbox.ProbeHost(context.Background(), sandbox.ProbeOptions{LandlockABI: landlock.ABI})
	b, why := p.Auto()
	switch b {
	case policy.BackendBwrap:
		return b, "", nil
	case policy.BackendLandlock:
		return b, "backend auto chose landlock: " + why + " (see warden doctor)", nil
	case policy.BackendSeatbelt:
		return b, "", nil
	default:
	}
	reasons := []string{}
	for _, f := range []sandbox.Feature{p.Bwrap, p.UserNS, p.Landlock, p.Seccomp} {
		if f.Reason != "" {
			reasons = append(reasons, f.Reason)
		}
	}
	return "", "", fmt.Errorf("launch: no sandbox backend can run here: %s (run warden doctor for fixes)", strings.Join(reasons, "; "))
}

// Self is the absolute, symlink-resolved path of the running warden binary,
// which is re-executed inside the sandbox.
func Self() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("launch: locate warden binary: %w", err)
	}
	return filepath.EvalSymlinks(p)
}

// Streams are the target's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Run executes the plan and returns the target's exit code.
func (p *Plan) Run(ctx context.Context, io Streams) (int, error) {
	if p.Resolved.Network.Mode == policy.NetFiltered || len(p.Skills) > 0 || p.Harness != nil {
		dir, err := sandbox.RuntimeDir()
		if err != nil {
			return 125, &sandbox.StartError{Err: err}
		}
		defer os.RemoveAll(dir)
		p.Sandbox.RuntimeDir = dir
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if p.Resolved.Network.Mode == policy.NetFiltered {
		es, err := startEgress(p, logger)
		if err != nil {
			return 125, &sandbox.StartError{Err: err}
		}
		defer es.close()
	}
	if len(p.Skills) > 0 {
		ss, err := startSkills(ctx, p, logger)
		if err != nil {
			return 125, &sandbox.StartError{Err: err}
		}
		defer ss.close()
	}
	if p.Harness != nil {
		if err := p.Harness.prepare(p.Sandbox); err != nil {
			return 125, &sandbox.StartError{Err: err}
		}
	}
	switch p.Backend {
	case policy.BackendBwrap:
		if ts, ok := openTTY(io); ok {
			defer ts.Close()
			p.tty.Store(ts)
			defer p.tty.Store(nil)
			p.Sandbox.TTY = true
			io = Streams{In: ts.Follower, Out: ts.Follower, Err: ts.Follower}
		}
		return (&bwrap.Runner{Stdin: io.In, Stdout: io.Out, Stderr: io.Err}).Run(ctx, p.Sandbox)
	case policy.BackendLandlock, policy.BackendNone:
		return (&hostrun.Runner{Stdin: io.In, Stdout: io.Out, Stderr: io.Err}).Run(ctx, p.Sandbox)
	case policy.BackendSeatbelt:
		if p.Resolved.Network.Mode == policy.NetFiltered {
			return 125, &sandbox.StartError{Err: errors.New("launch: network.mode filtered is not wired to the seatbelt backend yet")}
		}
		return (&seatbelt.Runner{Stdin: io.In, Stdout: io.Out, Stderr: io.Err}).Run(ctx, p.Sandbox)
	case policy.BackendAuto:
	}
	return 125, errors.New("launch: no runner for backend " + string(p.Backend))
}

// StartFailed reports whether err means the target never started.
func StartFailed(err error) bool {
	_, ok := errors.AsType[*sandbox.StartError](err)
	return ok
}

// openTTY hands a fresh pty to the sandbox when warden's stdin and stdout
// are the user's terminal, so interactive programs get job control and
// window size changes without ever holding the real terminal.
func openTTY(s Streams) (*pty.Session, bool) {
	in, ok1 := s.In.(*os.File)
	out, ok2 := s.Out.(*os.File)
	if !ok1 || !ok2 || !pty.IsTerminal(in) || !pty.IsTerminal(out) {
		return nil, false
	}
	ts, err := pty.Open(in, out)
	if err != nil {
		return nil, false
	}
	return ts, true
}

// secretStore opens warden's secret store the first time it is needed and
// returns the same store (or error) after that.
func (p *Plan) secretStore() (secrets.Store, error) {
	p.storeOnce.Do(func() {
		if p.store != nil {
			return // handed over by NewStartPlan
		}
		o, err := keychain.Open(keychain.Config{})
		if err != nil {
			p.storeErr = err
			return
		}
		p.store = o
	})
	return p.store, p.storeErr
}
