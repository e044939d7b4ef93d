//go:build linux

package child

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// maxConfig bounds the configuration read from the pipe.
const maxConfig = 16 << 20

func readConfig() (*sandbox.ChildConfig, error) {
	f := os.NewFile(sandbox.ChildFD, "warden-config")
	if f == nil {
		return nil, errors.New("no configuration descriptor")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfig))
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	var c sandbox.ChildConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("decode configuration: %w", err)
	}
	if len(c.Argv) == 0 {
		return nil, errors.New("empty command")
	}
	return &c, nil
}

func fail(code int, format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "warden: "+format+"\n", a...)
	return code
}

// forwarded are the signals PID 1 relays to the target's process group.
var forwarded = []os.Signal{
	unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU,
}

// Init is `warden __child init`, PID 1 of the sandbox.
func Init() int {
	// Before Landlock ABI 8, restricting "all threads" gives each thread a
	// domain of its own, and a process may only signal into its own domain
	// or those nested under it. PID 1 therefore restricts itself, starts
	// the target and signals it from one and the same OS thread.
	runtime.LockOSThread()
	cfg, err := readConfig()
	if err != nil {
		return fail(125, "sandbox init: %v", err)
	}
	// Nothing but stdio may reach the exec stage uninvited.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)

	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, append([]os.Signal{unix.SIGCHLD}, forwarded...)...)
	// Bridges listen before the target starts, so its first connection
	// finds them.
	for _, rl := range cfg.Relays {
		if err := startRelay(rl); err != nil {
			return fail(125, "sandbox init: relay %s: %v", rl.Listen, err)
		}
	}
	for _, ex := range cfg.Exposes {
		if err := startExpose(ex); err != nil {
			return fail(125, "sandbox init: expose %s: %v", ex.Unix, err)
		}
	}

	var target int
	if len(cfg.Relays) == 0 && len(cfg.Exposes) == 0 {
		// Nothing for PID 1 to host: it takes the final restrictions
		// itself (they are inherited) and starts the target directly,
		// saving a second process image.
		if code, err := restrict(cfg); err != nil {
			return fail(code, "%v", err)
		}
		pid, code, err := startTarget(cfg)
		if err != nil {
			return fail(code, "%v", err)
		}
		target = pid
	} else {
		// PID 1 keeps the bridges' sockets; the restrictions go to a
		// separate exec stage.
		pid, err := startExecStage(cfg)
		if err != nil {
			return fail(125, "sandbox init: %v", err)
		}
		target = pid
	}

	for sig := range sigs {
		if sig != unix.SIGCHLD {
			_ = unix.Kill(-target, sig.(syscall.Signal))
			continue
		}
		for {
			var ws unix.WaitStatus
			flags := unix.WNOHANG
			if cfg.TTY {
				flags |= unix.WUNTRACED
			}
			pid, err := unix.Wait4(-1, &ws, flags, nil)
			if err != nil || pid <= 0 {
				break
			}
			if pid != target {
				continue // an orphan, reaped
			}
			switch {
			case ws.Exited():
				return ws.ExitStatus()
			case ws.Signaled():
				return 128 + int(ws.Signal())
			case ws.Stopped():
				// Ctrl-Z on the sandbox's pty stops the target, but nothing
				// outside could resume it: the user's shell only knows
				// warden. Continue it at once, and say so.
				_, _ = fmt.Fprintf(os.Stderr, "\r\nwarden: suspending is not supported inside the sandbox (%v); continuing\r\n", ws.StopSignal())
				_ = unix.Kill(-target, unix.SIGCONT)
			}
		}
	}
	return 125
}

// Exec is `warden __child exec`: it applies the final restrictions and
// replaces itself with the target.
func Exec() int {
	cfg, err := readConfig()
	if err != nil {
		return fail(125, "sandbox exec: %v", err)
	}
	path, err := lookPath(cfg.Argv[0], cfg.Env)
	if err != nil {
		return fail(127, "%s: command not found", cfg.Argv[0])
	}
	if code, err := restrict(cfg); err != nil {
		return fail(code, "%v", err)
	}
	// Every inherited descriptor but stdio is closed on exec (threat B5).
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(125, "sandbox exec: close descriptors: %v", err)
	}
	err = unix.Exec(path, cfg.Argv, cfg.Env)
	if errors.Is(err, unix.ENOENT) {
		return fail(127, "%s: %v", cfg.Argv[0], err)
	}
	return fail(126, "%s: %v", cfg.Argv[0], err)
}

// restrict applies, irreversibly and in this order, rlimits,
// no_new_privs, Landlock and seccomp to the calling process and everything
// it starts afterwards.
func restrict(cfg *sandbox.ChildConfig) (int, error) {
	if err := applyLimits(cfg); err != nil {
		return 125, fmt.Errorf("sandbox: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 125, fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if cfg.Dir != "" {
		if err := os.Chdir(cfg.Dir); err != nil {
			return 125, fmt.Errorf("sandbox: %w", err)
		}
	}
	if cfg.Landlock != nil {
		if err := landlock.Apply(cfg.Landlock); err != nil {
			return 125, fmt.Errorf("sandbox: %w", err)
		}
	}
	if cfg.Seccomp != nil {
		arch, err := seccomp.NativeArch()
		if err != nil {
			return 125, fmt.Errorf("sandbox: %w", err)
		}
		prog, err := seccomp.Compile(*cfg.Seccomp, arch)
		if err != nil {
			return 125, fmt.Errorf("sandbox: %w", err)
		}
		if err := seccomp.Install(prog); err != nil {
			return 125, fmt.Errorf("sandbox: %w", err)
		}
	}
	return 0, nil
}

// startTarget starts the command as PID 1's child in its own process
// group; only stdio is passed (the rest is close-on-exec).
func startTarget(cfg *sandbox.ChildConfig) (int, int, error) {
	path, err := lookPath(cfg.Argv[0], cfg.Env)
	if err != nil {
		return 0, 127, fmt.Errorf("%s: command not found", cfg.Argv[0])
	}
	pid, err := syscall.ForkExec(path, cfg.Argv, &syscall.ProcAttr{ //nolint:gosec // G204: running the user's command is the point
		Dir:   cfg.Dir,
		Env:   cfg.Env,
		Files: []uintptr{0, 1, 2},
		Sys:   targetAttr(cfg),
	})
	switch {
	case errors.Is(err, syscall.ENOENT):
		return 0, 127, fmt.Errorf("%s: %w", cfg.Argv[0], err)
	case err != nil:
		return 0, 126, fmt.Errorf("%s: %w", cfg.Argv[0], err)
	}
	return pid, 0, nil
}

// startExecStage starts `warden __child exec`, which restricts itself and
// becomes the target, and sends it the configuration on fd 3.
func startExecStage(cfg *sandbox.ChildConfig) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(sandbox.InnerSelf, "__child", "exec") //nolint:gosec,noctx // G204: a constant path; PID 1 has no context to cancel
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r} // becomes fd 3
	cmd.SysProcAttr = targetAttr(cfg)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return 0, fmt.Errorf("start target: %w", err)
	}
	r.Close()
	err = json.NewEncoder(w).Encode(cfg)
	w.Close()
	if err != nil {
		return 0, fmt.Errorf("send configuration: %w", err)
	}
	return cmd.Process.Pid, nil
}

// targetAttr puts the target in its own process group, or with a TTY in
// its own session with stdin as the controlling terminal, so the pty's
// line discipline delivers Ctrl-C, Ctrl-Z and SIGWINCH to it. Either way
// PID 1 signals it as -pid.
func targetAttr(cfg *sandbox.ChildConfig) *syscall.SysProcAttr {
	if cfg.TTY {
		return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

func applyLimits(cfg *sandbox.ChildConfig) error {
	l := cfg.Limits
	set := func(res int, v int64, name string) error {
		if v <= 0 {
			return nil
		}
		// syscall.Setrlimit (not x/sys) so the runtime does not restore
		// its own RLIMIT_NOFILE on exec.
		lim := syscall.Rlimit{Cur: uint64(v), Max: uint64(v)}
		if err := syscall.Setrlimit(res, &lim); err != nil {
			return fmt.Errorf("limits.%s: %w", name, err)
		}
		return nil
	}
	return errors.Join(
		set(unix.RLIMIT_NPROC, l.Processes, "processes"),
		set(unix.RLIMIT_NOFILE, l.OpenFiles, "open_files"),
		set(unix.RLIMIT_AS, l.Memory, "memory"),
		set(unix.RLIMIT_CPU, l.CPUSeconds, "cpu_seconds"),
		set(unix.RLIMIT_FSIZE, l.FileSize, "file_size"),
	)
}

// lookPath finds name on the PATH of the target's environment.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}
