//go:build darwin

package seatbelt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
)

// Run launches s under sandbox-exec and returns the target's exit code
// (128+N when a signal ended it). A *sandbox.StartError means the target never
// started (exit 125 by convention).
//
// There is no re-exec'd child stage on macOS yet: sandbox-exec applies
// the profile and execs the target directly, so the target's pid is the
// one warden started. It runs in a new session (setsid), so the user's
// terminal is not its controlling terminal: TIOCSTI into it fails with
// EACCES (threat D1), and warden forwards the terminal's signals and
// SIGWINCH to the target's process group instead.
func (rn *Runner) Run(ctx context.Context, s *sandbox.Spec) (int, error) {
	if s == nil || s.Policy == nil {
		return 125, &sandbox.StartError{Err: errors.New("seatbelt: no policy")}
	}
	if len(s.Argv) == 0 {
		return 125, &sandbox.StartError{Err: errors.New("seatbelt: no command")}
	}
	log := rn.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if fi, err := os.Stat(SandboxExec); err != nil || fi.Mode()&0o111 == 0 {
		return 125, &sandbox.StartError{Err: fmt.Errorf("seatbelt: %s is missing or not executable", SandboxExec)}
	}
	if s.Policy.Limits != (policy.Limits{}) {
		log.WarnContext(ctx, "resource limits are not enforced by the seatbelt backend yet", "limits", s.Policy.Limits)
	}

	tmp, err := sessionTmp()
	if err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	defer os.RemoveAll(tmp) // RemoveAll does not follow symlinks the agent left

	stdin, stdout, stderr := sandbox.Stdin(rn.Stdin), sandbox.Stdout(rn.Stdout), sandbox.Stderr(rn.Stderr)
	opt := Options{ProxyPort: rn.ProxyPort, FacadeSocket: rn.FacadeSocket, TmpDir: tmp, TTY: terminal(stdin, stdout, stderr)}
	prof, err := Compile(s, opt)
	if err != nil {
		return 125, &sandbox.StartError{Err: err}
	}
	if err := preflight(ctx, prof); err != nil {
		return 125, &sandbox.StartError{Err: err}
	}

	dir := s.Policy.Workdir
	if s.Policy.Scratch {
		dir = filepath.Join(tmp, "scratch")
		if err := os.Mkdir(dir, 0o700); err != nil {
			return 125, &sandbox.StartError{Err: fmt.Errorf("seatbelt: scratch dir: %w", err)}
		}
	}
	if code, err := lookTarget(s.Argv[0], s.Policy.Env, dir); err != nil {
		return code, err
	}

	args := append(prof.Args(), "--")
	args = append(args, s.Argv...)
	// Not CommandContext: on cancellation Run kills the target's whole
	// process group, not just its leader.
	cmd := exec.Command(SandboxExec, args...) //nolint:gosec,noctx // G204: fixed binary, compiled profile, the user's own argv
	cmd.Env = setEnv(s.Policy.Env, "TMPDIR", tmp)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		return 125, &sandbox.StartError{Err: fmt.Errorf("seatbelt: start sandbox-exec: %w", err)}
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			// The target leads its own process group (setsid), as a
			// foreground job would; deliver to the group like a terminal.
			if unix.Kill(-pid, sig.(syscall.Signal)) != nil {
				_ = unix.Kill(pid, sig.(syscall.Signal))
			}
		case <-ctx.Done():
			_ = unix.Kill(-pid, unix.SIGKILL)
			_ = cmd.Process.Kill()
			ctx = context.Background() // stop selecting on a closed channel
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return 125, &sandbox.StartError{Err: err}
			}
			code := cmd.ProcessState.ExitCode()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			return code, nil
		}
	}
}

// sessionTmp makes a fresh 0700 directory for the session's $TMPDIR and
// returns its resolved path (/private/var/folders/..., since Seatbelt
// matches resolved paths).
func sessionTmp() (string, error) {
	d, err := os.MkdirTemp("", "warden-s-")
	if err != nil {
		return "", fmt.Errorf("seatbelt: session TMPDIR: %w", err)
	}
	rd, err := filepath.EvalSymlinks(d)
	if err != nil {
		_ = os.Remove(d)
		return "", fmt.Errorf("seatbelt: session TMPDIR: %w", err)
	}
	return rd, nil
}

// preflight compiles the profile by running /usr/bin/true under it, so a
// profile that this macOS rejects is reported as a start failure rather
// than passed off as the target's exit status.
func preflight(ctx context.Context, prof *Profile) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append(prof.Args(), "--", "/usr/bin/true")
	cmd := exec.CommandContext(ctx, SandboxExec, args...) //nolint:gosec // G204: fixed binary and argv
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		return fmt.Errorf("seatbelt: sandbox-exec rejected the profile: %w: %s", err, msg)
	}
	return nil
}

// lookTarget reports a command that cannot be found on the sandbox's
// PATH (127) or is not executable (126) before anything starts, because
// sandbox-exec's own failure status could not be told from the target's.
func lookTarget(name string, env []string, dir string) (int, error) {
	var cands []string
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		cands = []string{name}
	} else {
		path := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		for _, d := range filepath.SplitList(path) {
			if d == "" || !filepath.IsAbs(d) {
				continue // a relative PATH entry would depend on the cwd
			}
			cands = append(cands, filepath.Join(d, name))
		}
	}
	found := false
	for _, c := range cands {
		fi, err := os.Stat(c)
		if err != nil || fi.IsDir() {
			continue
		}
		found = true
		if fi.Mode()&0o111 != 0 {
			return 0, nil
		}
	}
	if found {
		return 126, fmt.Errorf("seatbelt: %s: permission denied", name)
	}
	return 127, fmt.Errorf("seatbelt: %s: command not found", name)
}

// terminal returns the /dev/ttysNNN device behind the first stdio stream
// that is a terminal, or "" when there is none.
func terminal(streams ...any) string {
	for _, s := range streams {
		f, ok := s.(*os.File)
		if !ok {
			continue
		}
		fd := int(f.Fd())
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if _, err := unix.IoctlGetTermios(fd, unix.TIOCGETA); err != nil {
			continue
		}
		dev := uint64(uint32(st.Rdev)) //nolint:gosec // G115: dev_t's 32 bits, reinterpreted, not converted
		cand := fmt.Sprintf("/dev/ttys%03d", unix.Minor(dev))
		var cs unix.Stat_t
		if unix.Stat(cand, &cs) == nil && cs.Rdev == st.Rdev && cs.Mode&unix.S_IFMT == unix.S_IFCHR {
			return cand
		}
	}
	return ""
}

// setEnv returns env with key set to value.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
