//go:build linux

package bwrap

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
)

// Runner launches compiled specs with the system bubblewrap.
type Runner struct {
	// Bwrap is the bubblewrap binary; empty means look it up.
	Bwrap  string
	Logger *slog.Logger
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// FindBwrap returns the bubblewrap binary, preferring the system one.
func FindBwrap() (string, error) {
	for _, p := range []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("bwrap: bubblewrap not found (install it: apt-get install bubblewrap)")
	}
	return p, nil
}

// Session is the host-side state of one launch.
type Session struct {
	Dir          string // per-session runtime dir, 0700
	ownsDir      bool
	placeholders []placeholder
}

type placeholder struct {
	root, rel string
	dir       bool
	ino       uint64
}

// Prepare creates the runtime directory, the deny file and the
// placeholders for missing protected paths. Close undoes it.
func Prepare(s *sandbox.Spec) (*Session, error) {
	sess := &Session{Dir: s.RuntimeDir}
	if sess.Dir == "" {
		dir, err := sandbox.RuntimeDir()
		if err != nil {
			return nil, err
		}
		sess.Dir, sess.ownsDir = dir, true
	}
	dir := sess.Dir
	deny := filepath.Join(dir, "deny")
	f, err := os.OpenFile(deny, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0) //nolint:gosec // G304: a fixed name in our own fresh 0700 runtime dir
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	f.Close()
	s.DenyFile = deny
	for _, g := range s.Policy.Protect {
		if g.Exists {
			continue
		}
		if err := sess.placeholder(s.Policy, g); err != nil {
			sess.Close()
			return nil, err
		}
	}
	return sess, nil
}

func (sess *Session) placeholder(p *policy.Resolved, g policy.Grant) error {
	root := ""
	for _, w := range p.Write {
		if (g.Path == w.Path || strings.HasPrefix(g.Path, w.Path+"/") || w.Path == "/") && len(w.Path) > len(root) {
			root = w.Path
		}
	}
	if root == "" {
		return nil
	}
	rel, err := filepath.Rel(root, g.Path)
	if err != nil {
		return fmt.Errorf("bwrap: placeholder %s: %w", g.Path, err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("bwrap: placeholder: %w", err)
	}
	defer r.Close()
	if g.Dir {
		err = r.Mkdir(rel, 0o755)
	} else {
		var f *os.File
		f, err = r.OpenFile(rel, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
		}
	}
	if errors.Is(err, fs.ErrExist) {
		return nil // someone made it meanwhile; it is protected all the same
	}
	if err != nil {
		return fmt.Errorf("bwrap: placeholder for protected %s: %w", g.Path, err)
	}
	fi, err := r.Lstat(rel)
	if err != nil {
		return fmt.Errorf("bwrap: placeholder: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	ph := placeholder{root: root, rel: rel, dir: g.Dir}
	if st != nil {
		ph.ino = st.Ino
	}
	sess.placeholders = append(sess.placeholders, ph)
	return nil
}

// Close removes the placeholders (when still empty and still ours) and the
// runtime directory.
func (sess *Session) Close() {
	for _, ph := range sess.placeholders {
		r, err := os.OpenRoot(ph.root)
		if err != nil {
			continue
		}
		if fi, err := r.Lstat(ph.rel); err == nil {
			st, _ := fi.Sys().(*syscall.Stat_t)
			if st != nil && st.Ino == ph.ino && (ph.dir && fi.IsDir() || !ph.dir && fi.Mode().IsRegular() && fi.Size() == 0) {
				_ = r.Remove(ph.rel) // fails harmlessly if a directory is no longer empty
			}
		}
		r.Close()
	}
	if sess.ownsDir {
		_ = os.RemoveAll(sess.Dir)
	} else if sess.Dir != "" {
		_ = os.Remove(filepath.Join(sess.Dir, "deny"))
	}
}

// Run launches s and returns the target's exit code. A *StartError means
// the target never started (exit 125 by convention).
func (rn *Runner) Run(ctx context.Context, s *sandbox.Spec) (int, error) {
	bw := rn.Bwrap
	if bw == "" {
		var err error
		if bw, err = FindBwrap(); err != nil {
			return 125, &sandbox.StartError{Err: err}
		}
	}
	sess, err := Prepare(s)
	if err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	defer sess.Close()

	// fd 3: configuration for the child; fd 4: bubblewrap's status.
	args, err := Compile(s, Options{StatusFD: 4})
	if err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	defer cfgR.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		cfgW.Close()
		return 125, &sandbox.StartError{Err: err}
	}
	defer stR.Close()

	// Not CommandContext: cancellation is handled below, by killing bwrap
	// (and with it, through --die-with-parent, the whole sandbox).
	cmd := exec.Command(bw, args...) //nolint:gosec,noctx // G204: bwrap path is ours, args are compiled; noctx: see above
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sandbox.Stdin(rn.Stdin), sandbox.Stdout(rn.Stdout), sandbox.Stderr(rn.Stderr)
	cmd.ExtraFiles = []*os.File{cfgR, stW}
	// bubblewrap gets its own process group: terminal signals reach warden,
	// which forwards them to the sandbox's PID 1.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		cfgW.Close()
		stW.Close()
		return 125, &sandbox.StartError{Err: fmt.Errorf("start bwrap: %w", err)}
	}
	stW.Close()
	cfgR.Close()

	cc := sandbox.ChildConfig{Argv: s.Argv, Env: sandbox.MergeEnv(s.Policy.Env, s.Env), Dir: s.StartDir(), Limits: s.Policy.Limits, Landlock: s.Landlock, Seccomp: s.Seccomp, Relays: s.Relays, Exposes: s.Exposes, TTY: s.TTY}
	if s.Policy.Scratch {
		cc.Dir = sandbox.InnerScratch
	}
	go func() {
		_ = json.NewEncoder(cfgW).Encode(&cc) // a failure shows as the child's error
		cfgW.Close()
	}()

	// The status pipe reports the child's host PID once the sandbox is up;
	// signals that arrive before that are held and delivered then.
	pidCh := make(chan int, 1)
	started := make(chan struct{})
	go func() {
		defer close(started)
		sc := bufio.NewScanner(stR)
		for sc.Scan() {
			var st struct {
				ChildPID int `json:"child-pid"`
			}
			if json.Unmarshal(sc.Bytes(), &st) == nil && st.ChildPID > 0 {
				pidCh <- st.ChildPID
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	childPID := 0
	var pending []os.Signal
	for {
		select {
		case pid := <-pidCh:
			childPID = pid
			for _, sig := range pending {
				_ = unix.Kill(childPID, sig.(syscall.Signal))
			}
			pending = nil
		case sig := <-sigs:
			if childPID > 0 {
				_ = unix.Kill(childPID, sig.(syscall.Signal))
			} else if sig != unix.SIGWINCH {
				pending = append(pending, sig)
			}
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case err := <-done:
			<-started
			select {
			case pid := <-pidCh:
				childPID = pid
			default:
			}
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return 125, &sandbox.StartError{Err: err}
			}
			code := cmd.ProcessState.ExitCode()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			if childPID == 0 {
				return 125, &sandbox.StartError{Err: fmt.Errorf("bubblewrap exited with status %d before the sandbox started (its message is above)", code)}
			}
			return code, nil
		}
	}
}
