//go:build linux

package hostrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
)

// Runner starts `warden __child exec` directly on the host.
type Runner struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run executes s. With s.Landlock nil (the none backend) only the
// environment, rlimits, no_new_privs and the seccomp filter (when set)
// apply.
func (rn *Runner) Run(ctx context.Context, s *sandbox.Spec) (int, error) {
	dir := s.RuntimeDir
	if dir == "" {
		d, err := sandbox.RuntimeDir()
		if err != nil {
			return 125, &sandbox.StartError{Err: err}
		}
		defer os.RemoveAll(d)
		dir = d
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	// Without a mount namespace, the real $HOME cannot be swapped for an
	// empty one, so the target gets a private, throw-away $HOME inside its
	// TMPDIR: tools then find no config (ENOENT) rather than fail on an
	// unreadable one (EACCES).
	home := filepath.Join(tmp, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	env := make([]string, 0, len(s.Policy.Env))
	for _, kv := range sandbox.MergeEnv(s.Policy.Env, s.Env) {
		if !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR="+tmp, "HOME="+home)
	cc := sandbox.ChildConfig{Argv: s.Argv, Env: env, Dir: s.StartDir(), Limits: s.Policy.Limits, Seccomp: s.Seccomp}
	if s.Policy.Scratch {
		// The fresh scratch dir is the private TMPDIR's "scratch".
		cc.Dir = filepath.Join(tmp, "scratch")
		if err := os.Mkdir(cc.Dir, 0o700); err != nil {
			return 125, &sandbox.StartError{Err: err}
		}
	}
	if s.Landlock != nil {
		rs := *s.Landlock
		rs.FS = append(append([]landlock.PathRule(nil), rs.FS...), landlock.PathRule{Path: tmp, Access: landlock.RW, Why: "private per-session TMPDIR"})
		cc.Landlock = &rs
	}

	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	defer cfgR.Close()
	cmd := exec.Command(s.Self, "__child", "exec") //nolint:gosec,noctx // G204: our own binary; the context is handled below by signalling the session
	cmd.Env = []string{}
	cmd.Dir = cc.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sandbox.Stdin(rn.Stdin), sandbox.Stdout(rn.Stdout), sandbox.Stderr(rn.Stderr)
	cmd.ExtraFiles = []*os.File{cfgR}
	// A new session: no controlling terminal to inject keystrokes into
	// (the seccomp filter also refuses TIOCSTI), and one group to end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	// Without a PID namespace, a daemon the target double-forks would
	// outlive the session (threat F8). As a subreaper warden inherits such
	// orphans, and kills them at the end.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	defer killOrphans()
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		cfgW.Close()
		return 125, &sandbox.StartError{Err: fmt.Errorf("start: %w", err)}
	}
	cfgR.Close()
	go func() {
		_ = json.NewEncoder(cfgW).Encode(&cc)
		cfgW.Close()
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := cmd.Process.Pid
	for {
		select {
		case sig := <-sigs:
			_ = unix.Kill(pid, sig.(syscall.Signal))
		case <-ctx.Done():
			_ = unix.Kill(-pid, unix.SIGKILL)
		case err := <-done:
			// Whatever the target left in its session ends with it.
			_ = unix.Kill(-pid, unix.SIGKILL)
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return 125, &sandbox.StartError{Err: err}
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return cmd.ProcessState.ExitCode(), nil
		}
	}
}

// killOrphans kills and reaps every process that has become warden's child
// since it turned subreaper: what the target left behind. Killing one may
// reparent its own children to us, so it repeats until none are left.
func killOrphans() {
	for range 50 {
		kids := children(os.Getpid())
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		for _, pid := range kids {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
		}
	}
}

// children lists the processes whose parent is pid, across its threads
// (a child belongs to the thread that forked it, or that inherited it).
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
