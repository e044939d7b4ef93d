package prompt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/egress"
)

// Button labels, shared by every dialog tool.
const (
	labelOnce   = "Allow once"
	labelAlways = "Always allow"
	labelDeny   = "Deny"
	labelNever  = "Never (deny always)"
	labelSite   = "Always allow the whole site"
)

// Dialog asks with a native dialog: zenity or kdialog on Linux and the
// BSDs when $DISPLAY or $WAYLAND_DISPLAY is set, osascript on macOS. The
// host reaches the tool only as one argv element (never through a shell
// or script source), after [checkHost]. Dialogs are serialised.
type Dialog struct {
	GOOS     string                       // default runtime.GOOS
	Getenv   func(string) string          // default os.Getenv
	LookPath func(string) (string, error) // default exec.LookPath
	// Run runs argv and returns its exit code and stdout; err is set only
	// when it could not run to an exit. Default: os/exec.
	Run     func(ctx context.Context, argv []string) (exitCode int, stdout []byte, err error)
	Timeout time.Duration // default DefaultTimeout

	mu sync.Mutex
}

var _ Asker = (*Dialog)(nil)

// ErrNoDialog is returned when no dialog tool can be used.
var ErrNoDialog = errors.New("prompt: no dialog tool available")

func (d *Dialog) goos() string {
	if d.GOOS != "" {
		return d.GOOS
	}
	return runtime.GOOS
}

func (d *Dialog) getenv(k string) string {
	if d.Getenv != nil {
		return d.Getenv(k)
	}
	return os.Getenv(k)
}

func (d *Dialog) lookPath(name string) (string, error) {
	if d.LookPath != nil {
		return d.LookPath(name)
	}
	return exec.LookPath(name)
}

// Tool returns the path of the dialog tool to use, or ErrNoDialog with the
// reason.
func (d *Dialog) Tool() (string, error) {
	var names []string
	switch d.goos() {
	case "darwin":
		names = []string{"osascript"}
	case "windows", "android", "ios", "plan9", "js", "wasip1":
		return "", fmt.Errorf("%w on %s", ErrNoDialog, d.goos())
	default:
		if d.getenv("DISPLAY") == "" && d.getenv("WAYLAND_DISPLAY") == "" {
			return "", fmt.Errorf("%w: neither DISPLAY nor WAYLAND_DISPLAY is set", ErrNoDialog)
		}
		names = []string{"zenity", "kdialog"}
	}
	for _, n := range names {
		if p, err := d.lookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found in PATH", ErrNoDialog, strings.Join(names, " or "))
}

// Ask shows the dialog and maps the button pressed to an answer. Closing
// the dialog denies; the timeout returns ErrTimeout.
func (d *Dialog) Ask(ctx context.Context, host string, port int) (Answer, error) {
	if err := checkHost(host); err != nil {
		return AnswerDeny, err
	}
	tool, err := d.Tool()
	if err != nil {
		return AnswerDeny, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	site, hasSite := Site(host)
	argv := dialogArgv(tool, target(host, port), site, timeout)
	// The tools' own timeouts are not all reliable; the context ends it
	// in any case, a little after.
	ctx, cancel := context.WithTimeout(ctx, timeout+2*time.Second)
	defer cancel()
	run := d.Run
	if run == nil {
		run = runCommand
	}
	d.notify(ctx, run, tool, argv)
	code, out, err := run(ctx, argv)
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return AnswerDeny, ErrTimeout
		}
		return AnswerDeny, fmt.Errorf("prompt: %w", ctx.Err())
	}
	if err != nil {
		return AnswerDeny, fmt.Errorf("prompt: %s: %w", baseName(tool), err)
	}
	a, err := parseDialog(baseName(tool), code, out)
	if a == AnswerSite && !hasSite {
		return AnswerDeny, errors.New("prompt: the site answer for a host without a site")
	}
	return a, err
}

// dialogArgv builds the tool's argv. what is a canonical host:port and site
// its registrable domain ("" for none); both are passed as data only.
func dialogArgv(tool, what, site string, timeout time.Duration) []string {
	text := "warden: allow network access to " + what + "?"
	if site != "" {
		text += " (site: " + site + ")"
	}
	secs := strconv.Itoa(max(1, int(timeout.Round(time.Second)/time.Second)))
	switch baseName(tool) {
	case "zenity":
		// OK: 0; Cancel or closed: 1 with no output; an extra button: 1
		// with its label on stdout; timeout: 5.
		argv := []string{
			tool, "--question", "--title=warden", "--no-markup", "--no-wrap",
			"--text=" + text, "--ok-label=" + labelOnce, "--cancel-label=" + labelDeny,
			"--extra-button=" + labelAlways,
		}
		if site != "" {
			argv = append(argv, "--extra-button="+labelSite)
		}
		return append(argv, "--extra-button="+labelNever, "--timeout="+secs)
	case "kdialog":
		// The chosen tag on stdout with 0; Cancel or closed: 1.
		argv := []string{
			tool, "--title", "warden", "--radiolist", text,
			"once", labelOnce, "on", "always", labelAlways, "off",
		}
		if site != "" {
			argv = append(argv, "site", labelSite, "off")
		}
		return append(argv, "deny", labelDeny, "off", "never", labelNever, "off")
	default: // osascript: the text is the script's argument, never its source
		items := "\"" + labelOnce + "\", \"" + labelAlways + "\", "
		if site != "" {
			items += "\"" + labelSite + "\", "
		}
		items += "\"" + labelDeny + "\", \"" + labelNever + "\""
		return []string{
			tool,
			"-e", "on run argv",
			"-e", "set r to choose from list {" + items + "} with title \"warden\" with prompt (item 1 of argv) default items {\"" + labelDeny + "\"}",
			"-e", "if r is false then return \"\"",
			"-e", "return item 1 of r",
			"-e", "end run",
			text,
		}
	}
}

// parseDialog maps a tool's exit code and output to an answer.
func parseDialog(tool string, code int, out []byte) (Answer, error) {
	s := string(bytes.TrimSpace(out))
	switch tool {
	case "zenity":
		switch code {
		case 0:
			return AnswerOnce, nil
		case 1:
			switch s {
			case labelAlways:
				return AnswerAlways, nil
			case labelNever:
				return AnswerNever, nil
			case labelSite:
				return AnswerSite, nil
			case "":
				return AnswerDeny, nil
			}
		case 5:
			return AnswerDeny, ErrTimeout
		}
	case "kdialog":
		switch code {
		case 0:
			if a, ok := parseAnswer(s); ok {
				return a, nil
			}
		case 1:
			return AnswerDeny, nil
		}
	default:
		if code == 0 {
			switch s {
			case labelOnce:
				return AnswerOnce, nil
			case labelAlways:
				return AnswerAlways, nil
			case labelDeny, "":
				return AnswerDeny, nil
			case labelNever:
				return AnswerNever, nil
			case labelSite:
				return AnswerSite, nil
			}
		}
		if code == 1 { // the user cancelled
			return AnswerDeny, nil
		}
	}
	return AnswerDeny, fmt.Errorf("prompt: %s: unexpected answer (exit %d, %d bytes of output)", tool, code, len(out))
}

// runCommand runs argv and returns its exit code and stdout; err is set
// only when it could not run to an exit.
func runCommand(ctx context.Context, argv []string) (int, []byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // G204: a dialog tool found by LookPath, with fixed options and a validated host
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.Exited() {
		return ee.ExitCode(), out.Bytes(), nil
	}
	if err != nil {
		return -1, nil, err
	}
	return 0, out.Bytes(), nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// checkHost refuses a host that is not in canonical form (the proxy only
// asks about normalised names and addresses; anything else is a bug or an
// attack on the prompt's rendering).
func checkHost(host string) error {
	n, err := egress.NormalizeHost(host)
	if err != nil {
		return fmt.Errorf("prompt: refusing to ask: %w", err)
	}
	if n != host {
		return fmt.Errorf("prompt: refusing to ask about %q: not in canonical form", host)
	}
	return nil
}

// notify first raises a desktop notification (notify-send, where there is
// one) so a dialog that opens behind other windows is not missed. It is
// best effort: its failure changes nothing.
func (d *Dialog) notify(ctx context.Context, run func(context.Context, []string) (int, []byte, error), tool string, argv []string) {
	if baseName(tool) == "osascript" {
		return
	}
	ns, err := d.lookPath("notify-send")
	if err != nil {
		return
	}
	var text string
	for i, a := range argv {
		if t, ok := strings.CutPrefix(a, "--text="); ok {
			text = t // zenity
		}
		if a == "--radiolist" && i+1 < len(argv) {
			text = argv[i+1] // kdialog
		}
	}
	nctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, _, _ = run(nctx, []string{ns, "--app-name=warden", "--urgency=critical", "--", "warden: network access requested", text})
}
