package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the sidecar: with WARDEN_SIDECAR_HELPER set,
// TestMain runs helperMain instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("WARDEN_SIDECAR_HELPER"); mode != "" {
		helperMain(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperMain(mode string) {
	switch mode {
	case "sleep": // a grandchild that ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return
	case "fail":
		fmt.Fprintln(os.Stderr, "helper: failing on purpose")
		os.Exit(1)
	}
	var l net.Listener
	var err error
	if os.Getenv("LISTEN_FDS") == "1" {
		if os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
			fmt.Fprintf(os.Stderr, "helper: LISTEN_PID=%s, pid %d\n", os.Getenv("LISTEN_PID"), os.Getpid())
			os.Exit(97)
		}
		l, err = net.FileListener(os.NewFile(3, os.Getenv("LISTEN_FDNAMES")))
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:"+os.Getenv("SIDECAR_PORT"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: listen:", err)
		os.Exit(98)
	}
	if n, _ := strconv.Atoi(os.Getenv("HELPER_SPAM")); n > 0 {
		line := strings.Repeat("x", 99) + "\n"
		for i := 0; i < n; i += len(line) {
			os.Stdout.WriteString(line)
		}
	}
	if pidFile := os.Getenv("HELPER_GRANDCHILD"); pidFile != "" {
		exe, _ := os.Executable()
		c := exec.Command(exe)
		c.Env = []string{"WARDEN_SIDECAR_HELPER=sleep"}
		c.Stdout = os.Stdout // holds the log pipe open too
		if err := c.Start(); err != nil {
			os.Exit(96)
		}
		os.WriteFile(pidFile, []byte(strconv.Itoa(c.Process.Pid)), 0o600)
	}
	if d, err := time.ParseDuration(os.Getenv("HELPER_CRASH_AFTER")); err == nil {
		time.AfterFunc(d, func() { os.Exit(3) })
	}
	fmt.Println("helper: serving")
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+strconv.Itoa(os.Getpid()))
	})
	mux.HandleFunc("/crash", func(w http.ResponseWriter, r *http.Request) { os.Exit(2) })
	http.Serve(l, mux)
}

type stateLog struct {
	mu  sync.Mutex
	sts map[string][]State
	ch  chan State
}

func newStateLog() *stateLog { return &stateLog{sts: map[string][]State{}, ch: make(chan State, 1000)} }

func (l *stateLog) on(name string, st State) {
	l.mu.Lock()
	l.sts[name] = append(l.sts[name], st)
	l.mu.Unlock()
	l.ch <- st
}

func (l *stateLog) get(name string) []State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]State(nil), l.sts[name]...)
}

func (l *stateLog) waitFor(t *testing.T, want State, timeout time.Duration) {
	t.Helper()
	tm := time.After(timeout)
	for {
		select {
		case st := <-l.ch:
			if st == want {
				return
			}
		case <-tm:
			t.Fatalf("state %v not reached", want)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func helperSpec(t *testing.T, name string, listenFD bool, env ...string) Spec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		Name:          name,
		Command:       []string{exe, "-test.run=^$"},
		Env:           append([]string{"WARDEN_SIDECAR_HELPER=serve"}, env...),
		HealthTimeout: 10 * time.Second,
		LogDir:        t.TempDir(),
		ListenFD:      listenFD,
	}
}

func newSupervisor(t *testing.T, cfg Config) (*Supervisor, *stateLog, *syncBuffer) {
	sl := newStateLog()
	buf := &syncBuffer{}
	cfg.OnState = sl.on
	cfg.Logger = slog.New(slog.NewTextHandler(buf, nil))
	if cfg.Grace == 0 {
		cfg.Grace = 2 * time.Second
	}
	s := New(cfg)
	t.Cleanup(func() {
		s.Close()
		checkNoChildren(t)
	})
	return s, sl, buf
}

func get(t *testing.T, addr, path string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("status %d", resp.StatusCode)
	}
	return string(b), err
}

// procStat returns (state, ppid, pgrp) of pid from /proc.
func procStat(pid int) (state byte, ppid, pgrp int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:])
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], ppid, pgrp, true
}

// checkNoChildren fails if this process still has children (running or
// zombie): every sidecar must have been reaped.
func checkNoChildren(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	ents, _ := os.ReadDir("/proc")
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ppid, _, ok := procStat(pid); ok && ppid == me {
			t.Errorf("child %d left behind (state %c)", pid, st)
		}
	}
}

func TestHealthFast(t *testing.T) {
	for _, fd := range []bool{true, false} {
		t.Run(fmt.Sprintf("listenfd=%v", fd), func(t *testing.T) {
			s, sl, _ := newSupervisor(t, Config{})
			t0 := time.Now()
			if err := s.Start(t.Context(), helperSpec(t, "fast", fd)); err != nil {
				t.Fatal(err)
			}
			d := time.Since(t0)
			t.Logf("start-to-healthy: %v", d)
			if d > 3*time.Second {
				t.Errorf("slow start: %v", d)
			}
			st, _ := s.Status("fast")
			if st.State != StateHealthy || st.PID == 0 || st.Port() == 0 {
				t.Fatalf("status %+v", st)
			}
			if _, err := get(t, st.Addr, "/hello"); err != nil {
				t.Fatal(err)
			}
			if got := sl.get("fast"); len(got) != 2 || got[0] != StateStarting || got[1] != StateHealthy {
				t.Errorf("states %v", got)
			}
		})
	}
}

func TestParallelStart(t *testing.T) {
	s, _, _ := newSupervisor(t, Config{})
	var specs []Spec
	for i := range 6 {
		specs = append(specs, helperSpec(t, "p"+strconv.Itoa(i), i%2 == 0))
	}
	t0 := time.Now()
	if err := s.Start(t.Context(), specs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("6 sidecars healthy in %v", time.Since(t0))
	for _, st := range s.Statuses() {
		if st.State != StateHealthy {
			t.Errorf("%+v", st)
		}
	}
}

func TestStartFailure(t *testing.T) {
	s, sl, _ := newSupervisor(t, Config{})
	bad := helperSpec(t, "bad", false)
	bad.Env = []string{"WARDEN_SIDECAR_HELPER=fail"}
	err := s.Start(t.Context(), bad, helperSpec(t, "good", true))
	var se *StartError
	if !errors.As(err, &se) || se.Name != "bad" || !errors.Is(err, ErrExited) {
		t.Fatalf("err = %v", err)
	}
	if st, _ := s.Status("bad"); st.State != StateBroken {
		t.Errorf("bad: %+v", st)
	}
	if st, _ := s.Status("good"); st.State != StateHealthy {
		t.Errorf("good: %+v", st)
	}
	if got := sl.get("bad"); got[len(got)-1] != StateBroken {
		t.Errorf("states %v", got)
	}
	// Port mode retried on fresh ports before giving up.
	log, _ := os.ReadFile(filepath.Join(bad.LogDir, "bad.log"))
	if n := strings.Count(string(log), "warden:"); n != 1+portRetries {
		t.Errorf("%d launches, want %d:\n%s", n, 1+portRetries, log)
	}

	to := helperSpec(t, "timeout", true)
	to.HealthPath = "/missing"
	to.HealthTimeout = 300 * time.Millisecond
	if err := s.Start(t.Context(), to); !errors.Is(err, ErrHealthTimeout) {
		t.Errorf("err = %v", err)
	}
}

func TestCrashUnderLoadRestarts(t *testing.T) {
	for _, fd := range []bool{true, false} {
		t.Run(fmt.Sprintf("listenfd=%v", fd), func(t *testing.T) {
			s, sl, _ := newSupervisor(t, Config{BackoffMin: 20 * time.Millisecond})
			if err := s.Start(t.Context(), helperSpec(t, "c", fd)); err != nil {
				t.Fatal(err)
			}
			st0, _ := s.Status("c")
			var ok, fail atomic.Int64
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for ctx.Err() == nil {
						if _, err := get(t, s.Addr("c"), "/hello"); err == nil {
							ok.Add(1)
						} else {
							fail.Add(1)
						}
					}
				})
			}
			time.Sleep(100 * time.Millisecond)
			crashAt := time.Now()
			get(t, st0.Addr, "/crash")
			sl.waitFor(t, StateDown, 5*time.Second)
			sl.waitFor(t, StateHealthy, 10*time.Second)
			t.Logf("down for %v", time.Since(crashAt))
			before := ok.Load()
			time.Sleep(200 * time.Millisecond)
			cancel()
			wg.Wait()
			st1, _ := s.Status("c")
			if ok.Load() <= before {
				t.Errorf("no successful requests after restart")
			}
			if st1.State != StateHealthy || st1.PID == st0.PID || st1.Restarts != 1 {
				t.Errorf("before %+v after %+v", st0, st1)
			}
			if fd && st1.Addr != st0.Addr {
				t.Errorf("ListenFD port changed: %s -> %s", st0.Addr, st1.Addr)
			}
			if body, err := get(t, st1.Addr, "/hello"); err != nil || body != "hello from "+strconv.Itoa(st1.PID) {
				t.Errorf("after restart: %q %v", body, err)
			}
			t.Logf("requests ok=%d failed=%d", ok.Load(), fail.Load())
		})
	}
}

func TestCircuitBreaker(t *testing.T) {
	s, sl, buf := newSupervisor(t, Config{BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, MaxCrashes: 3, CrashWindow: time.Minute})
	sp := helperSpec(t, "flappy", true, "HELPER_CRASH_AFTER=30ms")
	if err := s.Start(t.Context(), sp); err != nil {
		t.Fatal(err)
	}
	sl.waitFor(t, StateBroken, 20*time.Second)
	st, _ := s.Status("flappy")
	if st.State != StateBroken || st.PID != 0 || st.Restarts != 2 {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(buf.String(), "circuit breaker open") {
		t.Errorf("log lacks breaker:\n%s", buf.String())
	}
	// The listener is closed once broken: connections are refused.
	if _, err := get(t, st.Addr, "/hello"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after breaker: %v", err)
	}
	got := sl.get("flappy")
	want := []State{StateStarting, StateHealthy, StateDown, StateStarting, StateHealthy, StateDown, StateStarting, StateHealthy, StateBroken}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("states\n got %v\nwant %v", got, want)
	}
}

func TestTeardownKillsGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc")
	}
	s, sl, _ := newSupervisor(t, Config{Grace: 300 * time.Millisecond})
	pidFile := filepath.Join(t.TempDir(), "gc.pid")
	if err := s.Start(t.Context(), helperSpec(t, "g", false, "HELPER_GRANDCHILD="+pidFile)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := strconv.Atoi(string(b))
	leader, _ := s.Status("g")
	if _, _, pg, ok := procStat(gc); !ok || pg != leader.PID {
		t.Fatalf("grandchild %d pgrp %d, leader %d", gc, pg, leader.PID)
	}
	t0 := time.Now()
	s.Close()
	d := time.Since(t0)
	t.Logf("teardown took %v (grace 300ms; grandchild ignores SIGTERM)", d)
	if d < 250*time.Millisecond || d > 3*time.Second {
		t.Errorf("teardown took %v", d)
	}
	// The grandchild was reparented; it must be dead (gone or a zombie of
	// its new parent), never running.
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, _, _, ok := procStat(gc)
		if !ok || st == 'Z' || st == 'X' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive (state %c)", gc, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := sl.get("g"); got[len(got)-1] != StateStopped {
		t.Errorf("states %v", got)
	}
	checkNoChildren(t)
}

func TestLogRotationAndSecrets(t *testing.T) {
	s, _, buf := newSupervisor(t, Config{MaxLogBytes: 64 << 10})
	sp := helperSpec(t, "chatty", true, "HELPER_SPAM=300000", "SECRET_TOKEN=hunter2-value")
	// A previous run's log is kept as .1 at start.
	os.WriteFile(filepath.Join(sp.LogDir, "chatty.log"), []byte("previous run\n"), 0o600)
	if err := s.Start(t.Context(), sp); err != nil {
		t.Fatal(err)
	}
	s.Close()
	cur, err := os.ReadFile(filepath.Join(sp.LogDir, "chatty.log"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join(sp.LogDir, "chatty.log.1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cur) > 64<<10 || len(old) > 64<<10 || len(old) < 32<<10 {
		t.Errorf("sizes: log %d, log.1 %d (max %d)", len(cur), len(old), 64<<10)
	}
	if !strings.Contains(string(cur), "helper: serving") {
		t.Errorf("latest output missing from log")
	}
	if fi, _ := os.Stat(filepath.Join(sp.LogDir, "chatty.log")); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v", fi.Mode())
	}
	all := buf.String() + string(cur) + string(old)
	if strings.Contains(all, "hunter2-value") {
		t.Error("secret value logged")
	}
	if !strings.Contains(buf.String(), "SECRET_TOKEN") {
		t.Errorf("env names not logged:\n%s", buf.String())
	}
}

func TestStartValidation(t *testing.T) {
	s, _, _ := newSupervisor(t, Config{})
	for _, sp := range []Spec{
		{Name: "", Command: []string{"x"}},
		{Name: "a/b", Command: []string{"x"}},
		{Name: "ok"},
	} {
		if err := s.Start(t.Context(), sp); err == nil {
			t.Errorf("Start(%+v) = nil", sp)
		}
	}
	if err := s.Start(t.Context(), Spec{Name: "d", Command: []string{"x"}}, Spec{Name: "d", Command: []string{"x"}}); err == nil {
		t.Error("duplicate accepted")
	}
	s.Close()
	if err := s.Start(t.Context(), helperSpec(t, "late", true)); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestWrapKeepsListenFD(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env(1)")
	}
	s, _, buf := newSupervisor(t, Config{})
	sp := helperSpec(t, "wrapped", true)
	var wrapped []string
	sp.Wrap = func(c []string) []string {
		wrapped = append([]string{env}, c...)
		return wrapped
	}
	if err := s.Start(t.Context(), sp); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if wrapped[1] != "/bin/sh" {
		t.Errorf("shim not inside the wrapper: %q", wrapped)
	}
	if _, err := get(t, s.Addr("wrapped"), "/hello"); err != nil {
		t.Fatal(err)
	}
}

func TestStopOne(t *testing.T) {
	s, sl, _ := newSupervisor(t, Config{})
	if err := s.Start(t.Context(), helperSpec(t, "a", true), helperSpec(t, "b", false)); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr("a")
	if !s.Stop("a") || s.Stop("a") {
		t.Fatal("Stop result wrong")
	}
	if got := sl.get("a"); got[len(got)-1] != StateStopped {
		t.Errorf("states %v", got)
	}
	if _, err := get(t, addr, "/hello"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("stopped sidecar still answers: %v", err)
	}
	if _, err := get(t, s.Addr("b"), "/hello"); err != nil {
		t.Errorf("b affected: %v", err)
	}
	// The name can be reused.
	if err := s.Start(t.Context(), helperSpec(t, "a", true)); err != nil {
		t.Fatal(err)
	}
}
