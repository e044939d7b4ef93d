package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// listenShim sets LISTEN_PID to the shell's pid and execs the sidecar,
// which inherits that pid (see the package doc).
const listenShim = `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`

// portRetries is how often a port-binding sidecar that exits before
// becoming healthy is relaunched at once on a fresh port.
const portRetries = 2

type sidecar struct {
	s     *Supervisor
	spec  Spec
	log   *slog.Logger
	first chan error // result of the first start, buffered
	ctx   context.Context
	stop  context.CancelFunc
	done  chan struct{} // closed when run returns

	mu       sync.Mutex
	state    State
	port     int
	pid      int
	restarts int

	ln   *net.TCPListener // ListenFD mode only, held for the whole life
	logw io.Writer        // nil: discard
	logc io.Closer

	socketHealth *http.Client // Spec.Socket only
}

func newSidecar(s *Supervisor, sp Spec) *sidecar {
	sp.Command = slices.Clone(sp.Command)
	sp.Env = slices.Clone(sp.Env)
	if sp.HealthPath == "" {
		sp.HealthPath = "/status"
	}
	if !strings.HasPrefix(sp.HealthPath, "/") {
		sp.HealthPath = "/" + sp.HealthPath
	}
	if sp.HealthTimeout <= 0 {
		sp.HealthTimeout = 10 * time.Second
	}
	if sp.HealthInterval <= 0 {
		sp.HealthInterval = 100 * time.Millisecond
	}
	ctx, stop := context.WithCancel(s.ctx)
	var sh *http.Client
	if sp.Socket != "" {
		sock := sp.Socket
		sh = &http.Client{Transport: &http.Transport{
			Proxy:             nil,
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "unix", sock)
			},
		}}
	}
	return &sidecar{
		socketHealth: sh,
		ctx:          ctx,
		stop:         stop,
		done:         make(chan struct{}),
		state:        -1, // unset, so the first StateStarting is reported
		s:            s,
		spec:         sp,
		log:          s.log.With("sidecar", sp.Name),
		first:        make(chan error, 1),
	}
}

func (sc *sidecar) status() Status {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := Status{Name: sc.spec.Name, State: sc.state, PID: sc.pid, Restarts: sc.restarts}
	switch {
	case sc.spec.Socket != "":
		st.Addr = "unix:" + sc.spec.Socket
	case sc.port != 0:
		st.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(sc.port))
	}
	return st
}

func (sc *sidecar) setState(st State) {
	sc.mu.Lock()
	changed := sc.state != st
	sc.state = st
	sc.mu.Unlock()
	if !changed && st != StateHealthy {
		return
	}
	sc.log.InfoContext(sc.ctx, "state", "state", st.String())
	if fn := sc.s.cfg.OnState; fn != nil {
		fn(sc.spec.Name, st)
	}
}

// run owns the sidecar: launch, health, restart, breaker, teardown.
func (sc *sidecar) run() {
	defer close(sc.done)
	ctx := sc.ctx
	firstDone := false
	reportFirst := func(err error) {
		if !firstDone {
			firstDone = true
			sc.first <- err
		}
	}
	defer sc.cleanup()
	sc.setState(StateStarting)
	if err := sc.setup(); err != nil {
		sc.log.ErrorContext(ctx, "setup failed", "err", err)
		sc.setState(StateBroken)
		reportFirst(err)
		return
	}

	var crashes []time.Time
	backoff := sc.s.cfg.BackoffMin
	for {
		p, err := sc.launchHealthy(ctx)
		if ctx.Err() != nil {
			if p != nil {
				p.stop(sc.s.cfg.Grace)
			}
			sc.setState(StateStopped)
			reportFirst(ErrClosed)
			return
		}
		var leftover *proc // a crashed leader's group, torn down below
		if err == nil {
			sc.setState(StateHealthy)
			reportFirst(nil)
			healthyAt := time.Now()
			select {
			case <-p.exited:
			case <-ctx.Done():
				p.stop(sc.s.cfg.Grace)
				sc.setState(StateStopped)
				return
			}
			if time.Since(healthyAt) > 2*sc.s.cfg.BackoffMax {
				backoff = sc.s.cfg.BackoffMin
			}
			err = p.err
			if err == nil {
				err = errors.New("exited with status 0")
			}
			leftover = p
		}
		sc.mu.Lock()
		sc.pid = 0
		sc.mu.Unlock()
		sc.log.WarnContext(ctx, "sidecar failed", "err", err)
		if !firstDone {
			sc.setState(StateBroken)
			reportFirst(err)
			return
		}
		now := time.Now()
		crashes = append(crashes, now)
		crashes = slices.DeleteFunc(crashes, func(t time.Time) bool { return now.Sub(t) > sc.s.cfg.CrashWindow })
		broken := len(crashes) >= sc.s.cfg.MaxCrashes
		// Report first, so routes are swapped before a possibly slow
		// teardown of whatever the leader left in its group.
		if broken {
			sc.log.ErrorContext(ctx, "circuit breaker open", "crashes", len(crashes), "window", sc.s.cfg.CrashWindow)
			if sc.ln != nil {
				// Refuse before reporting, so nobody queues on a dead port.
				_ = sc.ln.Close()
			}
			sc.setState(StateBroken)
		} else {
			sc.setState(StateDown)
		}
		if leftover != nil {
			leftover.stop(sc.s.cfg.Grace)
		}
		if broken {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			sc.setState(StateStopped)
			return
		}
		backoff = min(2*backoff, sc.s.cfg.BackoffMax)
		sc.mu.Lock()
		sc.restarts++
		sc.mu.Unlock()
		sc.setState(StateStarting)
	}
}

// setup opens the log and, for ListenFD, binds the listener.
func (sc *sidecar) setup() error {
	if sc.spec.LogDir != "" {
		if err := os.MkdirAll(sc.spec.LogDir, 0o700); err != nil {
			return fmt.Errorf("log dir: %w", err)
		}
		rw, err := openRotator(filepath.Join(sc.spec.LogDir, sc.spec.Name+".log"), sc.s.cfg.MaxLogBytes)
		if err != nil {
			return err
		}
		sc.logw, sc.logc = rw, rw
	}
	if sc.spec.ListenFD {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		sc.ln = ln
		sc.mu.Lock()
		sc.port = ln.Addr().(*net.TCPAddr).Port
		sc.mu.Unlock()
	}
	return nil
}

func (sc *sidecar) cleanup() {
	if sc.ln != nil {
		// Nobody will accept any more: refuse instead of queueing.
		sc.ln.Close()
	}
	if sc.logc != nil {
		sc.logc.Close()
	}
}

// launchHealthy launches the process and waits for health. A port-binding
// sidecar that exits early is relaunched on a fresh port. On failure the
// process is already torn down and p is nil.
func (sc *sidecar) launchHealthy(ctx context.Context) (*proc, error) {
	for attempt := 0; ; attempt++ {
		if !sc.spec.ListenFD {
			sc.mu.Lock()
			prefer := sc.port
			sc.mu.Unlock()
			if attempt > 0 {
				prefer = 0
			}
			port, err := reservePort(ctx, prefer)
			if err != nil {
				return nil, err
			}
			sc.mu.Lock()
			sc.port = port
			sc.mu.Unlock()
		}
		start := time.Now()
		p, err := sc.launch()
		if err != nil {
			return nil, err
		}
		err = sc.waitHealthy(ctx, p)
		if err == nil {
			sc.log.InfoContext(ctx, "healthy", "pid", p.pid, "port", sc.status().Port(),
				"start_to_healthy", time.Since(start))
			return p, nil
		}
		p.stop(sc.s.cfg.Grace)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ErrExited) || sc.spec.ListenFD || attempt >= portRetries {
			return nil, err
		}
		sc.log.WarnContext(ctx, "exited before healthy; retrying on a fresh port", "err", err)
	}
}

func reservePort(ctx context.Context, prefer int) (int, error) {
	var lc net.ListenConfig
	if prefer != 0 {
		if l, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(prefer))); err == nil {
			l.Close()
			return prefer, nil
		}
	}
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("reserve port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port, nil
}

// proc is one launched process group.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once the leader is reaped
	err    error         // Wait's result, valid after exited
	copied chan struct{} // closed when the output pipe hit EOF
	outR   *os.File
}

func envNames(env []string) []string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	return names
}

func (sc *sidecar) launch() (*proc, error) {
	sp := sc.spec
	sc.mu.Lock()
	port := sc.port
	sc.mu.Unlock()
	env := slices.DeleteFunc(slices.Clone(sp.Env), func(kv string) bool {
		return strings.HasPrefix(kv, "LISTEN_PID=") || strings.HasPrefix(kv, "LISTEN_FDS=") || strings.HasPrefix(kv, "LISTEN_FDNAMES=")
	})
	env = append(env, "SIDECAR_PORT="+strconv.Itoa(port), "SIDECAR_SKILL="+sp.Name)
	argv := ExpandRuntime(sp.Command, port, sp.Name)
	var extra []*os.File
	if sp.ListenFD {
		f, err := sc.ln.File() // a dup; closed below once the child has it
		if err != nil {
			return nil, fmt.Errorf("listener fd: %w", err)
		}
		defer f.Close()
		extra = []*os.File{f}
		env = append(env, "LISTEN_FDS=1", "LISTEN_FDNAMES=http")
		argv = slices.Clone(argv)
		if !strings.Contains(argv[0], "/") {
			// Resolve as exec.Command would, not with the child's PATH.
			lp, err := exec.LookPath(argv[0])
			if err != nil {
				return nil, fmt.Errorf("start: %w", err)
			}
			argv[0] = lp
		}
		argv = append([]string{"/bin/sh", "-c", listenShim}, argv...)
	}
	if sp.Wrap != nil {
		argv = sp.Wrap(slices.Clone(argv))
		if len(argv) == 0 {
			return nil, errors.New("wrap returned an empty command")
		}
	}
	// Not CommandContext: its cancel would SIGKILL the leader only, while
	// teardown must signal the whole group (proc.stop).
	cmd := exec.Command(argv[0], argv[1:]...) //nolint:gosec,noctx // running the configured sidecar is the supervisor's job
	cmd.Env = env
	cmd.Dir = sp.Dir
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = sysProcAttr()

	p := &proc{cmd: cmd, exited: make(chan struct{}), copied: make(chan struct{})}
	var outW *os.File
	if sc.logw != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("pipe: %w", err)
		}
		p.outR, outW = r, w
		cmd.Stdout, cmd.Stderr = w, w
		fmt.Fprintf(sc.logw, "--- warden: %s start argv=%q port=%d env=%s\n",
			time.Now().UTC().Format(time.RFC3339Nano), argv, port, strings.Join(envNames(env), ","))
	}
	err := cmd.Start()
	if outW != nil {
		outW.Close()
	}
	if err != nil {
		if p.outR != nil {
			p.outR.Close()
		}
		return nil, fmt.Errorf("start: %w", err)
	}
	p.pid = cmd.Process.Pid
	if p.outR != nil {
		go func() {
			defer close(p.copied)
			_, _ = io.Copy(sc.logw, p.outR)
		}()
	} else {
		close(p.copied)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	sc.mu.Lock()
	sc.pid = p.pid
	sc.mu.Unlock()
	sc.log.InfoContext(sc.ctx, "started", "pid", p.pid, "port", port,
		"listen_fd", sp.ListenFD, "env", envNames(env))
	return p, nil
}

// waitHealthy polls the health path from the first millisecond, doubling
// the delay up to HealthInterval, until 2xx, exit, timeout or ctx.
func (sc *sidecar) waitHealthy(ctx context.Context, p *proc) error {
	sp := sc.spec
	u := "http://" + sc.status().Addr + sp.HealthPath
	if sp.Socket != "" {
		u = "http://sidecar" + sp.HealthPath
	}
	deadline := time.Now().Add(sp.HealthTimeout)
	delay := time.Millisecond
	for {
		remain := time.Until(deadline)
		if remain <= 0 {
			return ErrHealthTimeout
		}
		actx, cancel := context.WithTimeout(ctx, min(remain, time.Second))
		ok := sc.probe(actx, u)
		cancel()
		if ok {
			return nil
		}
		t := time.NewTimer(min(delay, max(time.Until(deadline), 0)))
		select {
		case <-p.exited:
			t.Stop()
			if p.err == nil {
				return fmt.Errorf("%w with status 0", ErrExited)
			}
			return fmt.Errorf("%w: %w", ErrExited, p.err)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, sp.HealthInterval)
	}
}

func (sc *sidecar) probe(ctx context.Context, u string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	client := sc.s.health
	if sc.spec.Socket != "" {
		client = sc.socketHealth
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// stop tears the process group down: SIGTERM, wait up to grace for the
// group to empty, SIGKILL, reap the leader. It is also used after a crash
// to kill leftovers, and is idempotent.
func (p *proc) stop(grace time.Duration) {
	pg := p.pid // Setpgid: the group id is the leader's pid
	deadline := time.Now().Add(grace)
	signalGroup(pg, sigTERM)
	for groupAlive(pg, p.exited) && time.Now().Before(deadline) {
		select {
		case <-p.exited:
		case <-time.After(5 * time.Millisecond):
		}
	}
	if groupAlive(pg, p.exited) {
		signalGroup(pg, sigKILL)
	}
	<-p.exited
	// Output ends when the last holder of the pipe is gone. A process that
	// left the group (setsid) could hold it forever, so cap the wait.
	select {
	case <-p.copied:
	case <-time.After(time.Second):
		if p.outR != nil {
			p.outR.Close()
		}
		<-p.copied
	}
	if p.outR != nil {
		p.outR.Close()
	}
}

// ExpandRuntime replaces ${SIDECAR_PORT} and ${SIDECAR_SKILL} (also
// without braces) in argv with the values of this start, which only the
// supervisor knows (omac manifests may pass the port as an argument).
func ExpandRuntime(argv []string, port int, name string) []string {
	r := strings.NewReplacer("${SIDECAR_PORT}", strconv.Itoa(port), "$SIDECAR_PORT", strconv.Itoa(port),
		"${SIDECAR_SKILL}", name, "$SIDECAR_SKILL", name)
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}
