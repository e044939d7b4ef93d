package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// State is a sidecar's lifecycle state.
type State int

const (
	// StateStarting: launched, waiting for the health check.
	StateStarting State = iota
	// StateHealthy: answered 2xx on its health path; Addr is valid.
	StateHealthy
	// StateDown: crashed or unhealthy; a restart is pending.
	StateDown
	// StateBroken: failed its first start or tripped the circuit breaker;
	// it is not restarted.
	StateBroken
	// StateStopped: torn down by Close.
	StateStopped
)

func (s State) String() string {
	switch s {
	case StateStarting:
		return "starting"
	case StateHealthy:
		return "healthy"
	case StateDown:
		return "down"
	case StateBroken:
		return "broken"
	case StateStopped:
		return "stopped"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Spec describes one sidecar.
type Spec struct {
	// Name identifies the sidecar (letters, digits, '.', '_', '-'); it
	// names the log file and is passed as SIDECAR_SKILL.
	Name string
	// Command is the argv. It must not carry secrets.
	Command []string
	Dir     string
	// Env is the complete environment of the child (nothing is inherited);
	// secrets go here. SIDECAR_PORT, SIDECAR_SKILL and, with ListenFD,
	// LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID are added (and override).
	Env []string
	// HealthPath is polled with GET; default "/status".
	HealthPath string
	// HealthTimeout bounds each wait for health; default 10s.
	HealthTimeout time.Duration
	// HealthInterval caps the poll backoff, which starts at 1ms; default
	// 100ms.
	HealthInterval time.Duration
	// LogDir receives <Name>.log (stdout and stderr), rotated to
	// <Name>.log.1 by size. Empty discards the output.
	LogDir string
	// Wrap, if set, rewrites the final argv, for example to run it in a
	// sandbox. It must keep fd 3 open for ListenFD sidecars.
	Wrap func(cmd []string) []string
	// ListenFD says the sidecar accepts its listening socket as fd 3
	// (systemd socket activation) instead of binding SIDECAR_PORT.
	ListenFD bool
	// Socket, when set, is a Unix socket through which the sidecar is
	// reached instead of 127.0.0.1:SIDECAR_PORT (a relay into a sandbox
	// with a network namespace of its own). Health checks use it, and
	// Addr reports "unix:" + Socket.
	Socket string
}

// Config configures a Supervisor.
type Config struct {
	Logger *slog.Logger
	// OnState is called on every state change, from the sidecar's own
	// goroutine (so calls for one sidecar are ordered, calls for different
	// sidecars may be concurrent). It may call Addr and Status.
	OnState func(name string, st State)
	// Grace is the wait between SIGTERM and SIGKILL; default 5s.
	Grace time.Duration
	// BackoffMin and BackoffMax bound the restart delay, which doubles
	// per crash and resets after a sidecar stays healthy for
	// 2*BackoffMax; defaults 100ms and 10s.
	BackoffMin, BackoffMax time.Duration
	// MaxCrashes crashes within CrashWindow trip the circuit breaker
	// (StateBroken); defaults 5 and 1 minute.
	MaxCrashes  int
	CrashWindow time.Duration
	// MaxLogBytes is the size at which a log is rotated; default 10 MiB.
	MaxLogBytes int64
}

// Status is a snapshot of one sidecar.
type Status struct {
	Name     string
	State    State
	Addr     string // "127.0.0.1:<port>" or "unix:<path>"; empty before the first launch
	PID      int    // 0 when no process runs
	Restarts int
}

// Port returns the port from Addr, or 0.
func (st Status) Port() int {
	_, p, err := net.SplitHostPort(st.Addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// Supervisor runs sidecars. Close it to tear them all down.
type Supervisor struct {
	cfg    Config
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	health *http.Client
	wg     sync.WaitGroup

	mu       sync.Mutex
	sidecars map[string]*sidecar
	closed   bool
}

// New returns a Supervisor with no sidecars.
func New(cfg Config) *Supervisor {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 100 * time.Millisecond
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(10*time.Second, cfg.BackoffMin)
	}
	if cfg.MaxCrashes <= 0 {
		cfg.MaxCrashes = 5
	}
	if cfg.CrashWindow <= 0 {
		cfg.CrashWindow = time.Minute
	}
	if cfg.MaxLogBytes <= 0 {
		cfg.MaxLogBytes = 10 << 20
	}
	s := &Supervisor{
		cfg:      cfg,
		log:      cfg.Logger,
		sidecars: map[string]*sidecar{},
		health: &http.Client{Transport: &http.Transport{
			Proxy:             nil,
			DisableKeepAlives: true,
			DialContext:       (&net.Dialer{Timeout: time.Second}).DialContext,
		}},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

func validName(n string) bool {
	if n == "" || len(n) > 64 || n == "." || n == ".." {
		return false
	}
	for _, c := range []byte(n) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Start launches specs in parallel and waits until each is healthy or has
// failed its first start, or ctx is done (which stops the waiting, not the
// sidecars). The error joins a *StartError per failed sidecar; the others
// keep running. Names must be unique within the supervisor.
func (s *Supervisor) Start(ctx context.Context, specs ...Spec) error {
	seen := map[string]bool{}
	for _, sp := range specs {
		if !validName(sp.Name) {
			return fmt.Errorf("sidecar: invalid name %q", sp.Name)
		}
		if len(sp.Command) == 0 {
			return fmt.Errorf("sidecar: %s: empty command", sp.Name)
		}
		if seen[sp.Name] {
			return fmt.Errorf("sidecar: duplicate name %q", sp.Name)
		}
		seen[sp.Name] = true
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	for _, sp := range specs {
		if _, ok := s.sidecars[sp.Name]; ok {
			s.mu.Unlock()
			return fmt.Errorf("sidecar: %s already started", sp.Name)
		}
	}
	started := make([]*sidecar, 0, len(specs))
	for _, sp := range specs {
		sc := newSidecar(s, sp)
		s.sidecars[sp.Name] = sc
		started = append(started, sc)
		s.wg.Go(sc.run)
	}
	s.mu.Unlock()

	var errs []error
	for _, sc := range started {
		select {
		case err := <-sc.first:
			if err != nil {
				errs = append(errs, &StartError{Name: sc.spec.Name, Err: err})
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// Addr returns the sidecar's "127.0.0.1:<port>" (or "unix:<path>" with
// Spec.Socket), or "" if unknown.
func (s *Supervisor) Addr(name string) string {
	st, _ := s.Status(name)
	return st.Addr
}

// Status returns a snapshot of the named sidecar.
func (s *Supervisor) Status(name string) (Status, bool) {
	s.mu.Lock()
	sc := s.sidecars[name]
	s.mu.Unlock()
	if sc == nil {
		return Status{}, false
	}
	return sc.status(), true
}

// Statuses returns snapshots of all sidecars, sorted by name.
func (s *Supervisor) Statuses() []Status {
	s.mu.Lock()
	scs := make([]*sidecar, 0, len(s.sidecars))
	for _, sc := range s.sidecars {
		scs = append(scs, sc)
	}
	s.mu.Unlock()
	out := make([]Status, 0, len(scs))
	for _, sc := range scs {
		out = append(out, sc.status())
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Stop tears the named sidecar down like Close and forgets it, so a new
// Spec with the same name can be started. It reports whether it existed.
func (s *Supervisor) Stop(name string) bool {
	s.mu.Lock()
	sc := s.sidecars[name]
	s.mu.Unlock()
	if sc == nil {
		return false
	}
	sc.stop()
	<-sc.done
	s.mu.Lock()
	if s.sidecars[name] == sc {
		delete(s.sidecars, name)
	}
	s.mu.Unlock()
	return true
}

// Close tears every sidecar down in parallel (SIGTERM to its process group,
// SIGKILL after Config.Grace), reaps them and returns once all are gone.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.health.CloseIdleConnections()
	return nil
}
