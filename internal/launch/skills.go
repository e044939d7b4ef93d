package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/buildinfo"
	"github.com/wardenhq/warden/internal/facade"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/sidecar"
	"github.com/wardenhq/warden/internal/skills"
)

// In-sandbox paths and port of the skills facade.
const (
	innerFacadeSocket      = "/run/warden/facade.sock"
	innerFacadeTokenSocket = "/run/warden/facade-token.sock" //nolint:gosec // G101: a socket path, not a credential
	innerFacadePort        = 3129
)

// OpenRegistry opens the skill registry in warden's state dir.
func OpenRegistry() (*skills.Registry, error) {
	d, err := StateDir()
	if err != nil {
		return nil, err
	}
	return skills.New(skills.Config{StateDir: d, Getenv: os.Getenv})
}

// skillSession is the facade and the sidecars of one session.
type skillSession struct {
	fac *facade.Facade
	sup *sidecar.Supervisor
}

func (ss *skillSession) close() {
	if ss.sup != nil {
		_ = ss.sup.Close()
	}
	if ss.fac != nil {
		_ = ss.fac.Close()
	}
}

// baseSidecarEnv are host variables every sidecar gets.
var baseSidecarEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

// startSkills resolves the approved skills named, starts their sidecars
// (in parallel, health polled from the first millisecond), and serves the
// facade on two sockets bound into the sandbox: a trusted one (peer uid
// checked) for WARDEN_SOCKET and a token-gated one that PID 1 relays a
// loopback port to.
func startSkills(ctx context.Context, p *Plan, logger *slog.Logger) (*skillSession, error) {
	if p.Backend != policy.BackendBwrap && p.Backend != policy.BackendLandlock {
		return nil, &PolicyError{Err: fmt.Errorf("skills: the facade needs the bwrap or landlock backend, not %s", p.Backend)}
	}
	// Open the secret store now, in parallel with checking the bundles:
	// the encrypted-file keyring's key derivation is slow on purpose.
	storeCh := make(chan storeResult, 1)
	go func() {
		st, err := p.secretStore()
		storeCh <- storeResult{st, err}
	}()
	approved := p.approved // resolved already by `warden start`
	if approved == nil {
		var err error
		if approved, err = resolveSkills(p.Skills); err != nil {
			return nil, &PolicyError{Err: err}
		}
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tok)
	fac, err := facade.New(facade.Config{Token: token, Version: buildinfo.String(), Port: innerFacadePort, Logger: logger.With("component", "facade")})
	if err != nil {
		return nil, err
	}
	ss := &skillSession{fac: fac}
	logDir := filepath.Join(p.Sandbox.RuntimeDir, "logs")
	if err := os.Mkdir(logDir, 0o700); err != nil {
		ss.close()
		return nil, err
	}
	var specs []sidecar.Spec
	var mounts []string
	for _, a := range approved {
		mounts = append(mounts, a.Mount)
		md, _ := os.ReadFile(filepath.Join(a.SnapshotDir, "SKILL.md"))
		sc := a.Manifest.Sidecar
		if sc == nil {
			_ = fac.SetRoute(facade.Route{Mount: a.Mount, Name: a.Name, Mode: facade.ModeBroken, SkillMD: md, Message: "this skill has no sidecar"})
			continue
		}
		_ = fac.SetRoute(facade.Route{Mount: a.Mount, Name: a.Name, Mode: facade.ModeStarting, SkillMD: md})
		argv := sc.ExpandCommand(func(k string) (string, bool) {
			if k == "SIDECAR_PORT" || k == "SIDECAR_SKILL" {
				return "${" + k + "}", true // the supervisor fills these in at each start
			}
			v, ok := a.Config[k]
			return v, ok
		})
		if len(argv) > 0 && !filepath.IsAbs(argv[0]) && strings.Contains(argv[0], "/") {
			argv[0] = filepath.Join(a.SnapshotDir, argv[0])
		}
		data, err := SidecarDataDir(a.Name)
		if err != nil {
			ss.close()
			return nil, err
		}
		box := SidecarBox{Name: a.Name, Snapshot: a.SnapshotDir, DataDir: data, Network: sc.Network, Backend: p.Backend}
		spec := sidecar.Spec{
			Name: a.Name, Command: argv, Dir: a.SnapshotDir,
			HealthPath: sc.Health.Path, LogDir: logDir,
		}
		if sc.Network != nil {
			box.ExposeDir = filepath.Join(p.Sandbox.RuntimeDir, "expose-"+a.Name)
			if err := os.Mkdir(box.ExposeDir, 0o700); err != nil {
				ss.close()
				return nil, fmt.Errorf("skills: %w", err)
			}
			spec.Socket = filepath.Join(box.ExposeDir, exposeSocket)
		}
		spec.Wrap = sidecarWrap(p.Sandbox.Self, p.Sandbox.RuntimeDir, box)
		specs = append(specs, spec)
	}
	routes := map[string]skills.Approved{}
	for _, a := range approved {
		routes[a.Name] = a
	}
	ss.sup = sidecar.New(sidecar.Config{Logger: logger.With("component", "sidecar"), OnState: func(name string, st sidecar.State) {
		a := routes[name]
		md, _ := os.ReadFile(filepath.Join(a.SnapshotDir, "SKILL.md"))
		r := facade.Route{Mount: a.Mount, Name: a.Name, SkillMD: md}
		switch st {
		case sidecar.StateHealthy:
			r.Mode, r.Upstream = facade.ModeProxy, upstream(ss.sup.Addr(name))
		case sidecar.StateBroken:
			r.Mode = facade.ModeBroken
		case sidecar.StateStarting:
			r.Mode = facade.ModeStarting // requests wait for it
		case sidecar.StateDown, sidecar.StateStopped:
			r.Mode = facade.ModeDown
		}
		_ = fac.SetRoute(r)
	}})
	if len(specs) > 0 {
		// The sidecars come up while the sandbox does: reading their
		// secrets (the encrypted-file keyring's key derivation is slow on
		// purpose) and starting them overlaps the sandbox's start, the
		// facade holds requests to a starting route, and a sidecar that
		// cannot start is reported to the agent (502 skill-broken, 409
		// pending-credentials) and in the log instead of holding the
		// whole session back.
		go startSidecars(ctx, ss, fac, routes, specs, storeCh, logger.With("component", "sidecar"))
	}
	if p.Backend == policy.BackendLandlock {
		if err := serveFacadeTCP(p.Sandbox, fac, token, mounts); err != nil {
			ss.close()
			return nil, err
		}
		return ss, nil
	}
	trusted, err := facade.ListenUnix(p.Sandbox.RuntimeDir, "facade.sock")
	if err != nil {
		ss.close()
		return nil, err
	}
	tokened, err := facade.ListenUnix(p.Sandbox.RuntimeDir, "facade-token.sock")
	if err != nil {
		trusted.Close()
		ss.close()
		return nil, err
	}
	go func() { _ = fac.ServeUnix(trusted) }()
	go func() { _ = fac.ServeToken(tokened) }()

	sb := p.Sandbox
	sb.Binds = append(sb.Binds,
		sandbox.Bind{Src: trusted.Addr().String(), Dst: innerFacadeSocket},
		sandbox.Bind{Src: tokened.Addr().String(), Dst: innerFacadeTokenSocket},
	)
	sb.Relays = append(sb.Relays, sandbox.Relay{Listen: fmt.Sprintf("127.0.0.1:%d", innerFacadePort), Unix: innerFacadeTokenSocket})
	sb.Env = append(sb.Env, facade.Env(innerFacadeSocket, innerFacadePort, token, mounts)...)
	// The agent reaches the facade's socket, and only it: the mount
	// namespace shows no other socket.
	if sb.Seccomp != nil {
		sb.Seccomp.AllowUnix = true
	}
	if sb.Landlock != nil {
		sb.Landlock.FS = append(sb.Landlock.FS, landlock.PathRule{Path: innerFacadeSocket, Access: landlock.RWFile, Why: "skills facade"})
	}
	return ss, nil
}

// sidecarEnv builds a sidecar's environment from scratch: base host
// variables, the manifest's passthrough, config, then secrets from the
// keychain. It returns the names of required secrets that are missing.
func sidecarEnv(a skills.Approved, store secrets.Store) ([]string, []string, error) {
	set := map[string]string{}
	sc := a.Manifest.Sidecar
	for _, k := range append(slices.Clone(baseSidecarEnv), sc.EnvPassthrough...) {
		if v, ok := os.LookupEnv(k); ok {
			set[k] = v
		}
	}
	maps.Copy(set, a.Config)
	set["WARDEN_SKILL_DIR"] = a.SnapshotDir
	var missing []string
	for _, s := range a.Secrets {
		v, err := store.Get(secrets.ServiceForSkill(a.Name), s.Name)
		switch {
		case errors.Is(err, secrets.ErrNotFound):
			if env, ok := os.LookupEnv(s.Name); ok && slices.Contains(sc.EnvPassthrough, s.Name) {
				set[s.Name] = env
				continue
			}
			if s.IsRequired() {
				missing = append(missing, s.Name)
			}
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("skills: %s: secret %s: %w", a.Name, s.Name, err)
		}
		set[s.Name] = v.RevealString()
	}
	env := make([]string, 0, len(set))
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env, missing, nil
}

// upstream is the facade's URL for a sidecar address: "unix:<path>" as
// is, "host:port" over HTTP.
func upstream(addr string) string {
	if strings.HasPrefix(addr, "unix:") {
		return addr
	}
	return "http://" + addr
}

// serveFacadeTCP serves the facade, under the landlock backend, on a
// token-gated loopback port only: without a mount namespace a Unix socket
// could not be shown alone, and letting the target create AF_UNIX
// sockets would open every socket on the host (docker.sock). Landlock lets
// the target connect to this port, as to the egress proxy's.
func serveFacadeTCP(sb *sandbox.Spec, fac *facade.Facade, token string, mounts []string) error {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("skills: facade listener: %w", err)
	}
	go func() { _ = fac.ServeToken(ln) }()
	port := ln.Addr().(*net.TCPAddr).Port
	var env []string
	for _, kv := range facade.Env("", port, token, mounts) {
		k, v, _ := strings.Cut(kv, "=")
		if k == "WARDEN_SOCKET" || k == "OMAC_SOCKET" || strings.HasSuffix(k, "_SOCKET_BASE") || v == "" {
			continue // there is no socket to offer
		}
		env = append(env, kv)
	}
	sb.Env = append(sb.Env, env...)
	if sb.Landlock != nil {
		sb.Landlock.ConnectTCP = append(sb.Landlock.ConnectTCP, uint16(port)) //nolint:gosec // G115: a port from the kernel
	}
	return nil
}

// startSidecars reads each sidecar's secrets from the keychain and starts
// those that have all they need.
func startSidecars(ctx context.Context, ss *skillSession, fac *facade.Facade, routes map[string]skills.Approved, specs []sidecar.Spec, storeCh <-chan storeResult, log *slog.Logger) {
	broken := func(a skills.Approved, msg string) {
		md, _ := os.ReadFile(filepath.Join(a.SnapshotDir, "SKILL.md"))
		_ = fac.SetRoute(facade.Route{Mount: a.Mount, Name: a.Name, Mode: facade.ModeBroken, SkillMD: md, Message: msg})
	}
	res := <-storeCh
	store, err := res.store, res.err
	if err != nil {
		log.WarnContext(ctx, "secret store unavailable; sidecars not started", "err", err)
		for _, sp := range specs {
			broken(routes[sp.Name], "warden's secret store is unavailable: "+err.Error())
		}
		return
	}
	ready := specs[:0]
	for _, sp := range specs {
		a := routes[sp.Name]
		env, missing, err := sidecarEnv(a, store)
		switch {
		case err != nil:
			log.WarnContext(ctx, "sidecar secrets", "sidecar", sp.Name, "err", err)
			broken(a, "its secrets could not be read")
		case len(missing) > 0:
			md, _ := os.ReadFile(filepath.Join(a.SnapshotDir, "SKILL.md"))
			_ = fac.SetRoute(facade.Route{Mount: a.Mount, Name: a.Name, Mode: facade.ModePending, SkillMD: md, Missing: missing})
		default:
			sp.Env = env
			ready = append(ready, sp)
		}
	}
	if len(ready) == 0 {
		return
	}
	if err := ss.sup.Start(ctx, ready...); err != nil && !errors.Is(err, sidecar.ErrClosed) && ctx.Err() == nil {
		log.WarnContext(ctx, "sidecar start failed", "err", err)
	}
}

type storeResult struct {
	store secrets.Store
	err   error
}
