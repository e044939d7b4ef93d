package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Answer is the user's reply to a prompt. The zero value denies.
type Answer int

// Answers.
const (
	AnswerDeny   Answer = iota // deny for this session
	AnswerOnce                 // allow for this session
	AnswerAlways               // allow and remember
	AnswerNever                // deny and remember
	AnswerSite                 // allow and remember for the whole site (Site of the host)
)

func (a Answer) String() string {
	switch a {
	case AnswerOnce:
		return "once"
	case AnswerAlways:
		return "always"
	case AnswerNever:
		return "never"
	case AnswerSite:
		return "site"
	case AnswerDeny:
	}
	return "deny"
}

// Asker asks the user whether the sandbox may reach host:port. host is
// in canonical form (the Prompter checks it). An error means nobody
// answered; the caller denies.
type Asker interface {
	Ask(ctx context.Context, host string, port int) (Answer, error)
}

// DefaultTimeout is how long a prompt waits before it denies.
const DefaultTimeout = 60 * time.Second

// ErrTimeout is returned when nobody answered in time.
var ErrTimeout = errors.New("prompt: no answer in time")

// Terminal asks on the warden process's controlling terminal, outside the
// sandbox. Prompts are serialised, so two never interleave, and the
// terminal is read only while a prompt is shown. The answer is a letter
// followed by Enter; anything else asks again.
//
// The agent shares the terminal: while a prompt is shown, keystrokes may
// reach the agent instead (prefer a [Dialog] where there is a display).
type Terminal struct {
	// TTY is the terminal. Nil: Open is called for each prompt.
	TTY     io.ReadWriter
	Open    func() (io.ReadWriteCloser, error) // default OpenTTY
	Timeout time.Duration                      // default DefaultTimeout

	mu sync.Mutex // one prompt at a time
	// pending is a read that outlived its prompt on a TTY without read
	// deadlines; the next prompt takes its result instead of reading
	// concurrently.
	pending chan readResult
}

var _ Asker = (*Terminal)(nil)

type readResult struct {
	line string
	err  error
}

// deadliner is implemented by *os.File for terminals.
type deadliner interface {
	SetReadDeadline(t time.Time) error
}

// OpenTTY opens the controlling terminal of the process; it fails when
// there is none.
func OpenTTY() (io.ReadWriteCloser, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("prompt: no controlling terminal: %w", err)
	}
	return f, nil
}

// Ask prints the prompt and reads answers until one is valid, the timeout
// passes (ErrTimeout) or ctx ends.
func (t *Terminal) Ask(ctx context.Context, host string, port int) (Answer, error) {
	if err := checkHost(host); err != nil {
		return AnswerDeny, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tty := t.TTY
	if tty == nil {
		open := t.Open
		if open == nil {
			open = OpenTTY
		}
		f, err := open()
		if err != nil {
			return AnswerDeny, err
		}
		defer f.Close()
		tty = f
		t.pending = nil // a new file: nothing can be pending on it
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	site := ""
	if s, ok := Site(host); ok {
		site = fmt.Sprintf(" / [s]ite (always *.%s)", s)
	}
	question := fmt.Sprintf("\r\nwarden: allow network access to %s? [o]nce / [a]lways%s / [d]eny / [n]ever (deny always) (denied in %ds) ", target(host, port), site, max(1, int(timeout.Round(time.Second)/time.Second)))
	for {
		if _, err := io.WriteString(tty, question); err != nil {
			return AnswerDeny, fmt.Errorf("prompt: terminal: %w", err)
		}
		line, err := t.readLine(ctx, tty)
		if err != nil {
			if ctx.Err() != nil {
				_, _ = io.WriteString(tty, "\r\nwarden: no answer; denied\r\n")
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return AnswerDeny, ErrTimeout
				}
				return AnswerDeny, fmt.Errorf("prompt: %w", ctx.Err())
			}
			return AnswerDeny, fmt.Errorf("prompt: terminal: %w", err)
		}
		if a, ok := parseAnswer(line); ok && (a != AnswerSite || site != "") {
			_, _ = fmt.Fprintf(tty, "\r\nwarden: %s: %s\r\n", target(host, port), a)
			return a, nil
		}
		_, _ = io.WriteString(tty, "\r\nwarden: answer o, a, d or n"+map[bool]string{true: ", s", false: ""}[site != ""]+", then Enter")
	}
}

// parseAnswer accepts a letter or the whole word, in any case.
func parseAnswer(line string) (Answer, bool) {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "o", "once":
		return AnswerOnce, true
	case "a", "always":
		return AnswerAlways, true
	case "d", "deny":
		return AnswerDeny, true
	case "n", "never":
		return AnswerNever, true
	case "s", "site":
		return AnswerSite, true
	}
	return AnswerDeny, false
}

// readLine reads up to a newline or carriage return (the Enter key in
// both cooked and raw mode), one byte at a time so nothing after the
// answer is consumed. On ctx's end a terminal read is interrupted with a
// read deadline; other readers keep a pending read for the next prompt.
func (t *Terminal) readLine(ctx context.Context, tty io.ReadWriter) (string, error) {
	ch := t.pending
	t.pending = nil
	if ch == nil {
		ch = make(chan readResult, 1)
		go func() {
			var b strings.Builder
			var buf [1]byte
			for {
				n, err := tty.Read(buf[:])
				if n == 1 {
					if buf[0] == '\n' || buf[0] == '\r' {
						ch <- readResult{line: b.String()}
						return
					}
					if b.Len() < 64 {
						b.WriteByte(buf[0])
					}
				}
				if err != nil {
					ch <- readResult{err: err}
					return
				}
			}
		}()
	}
	select {
	case r := <-ch:
		return r.line, r.err
	case <-ctx.Done():
	}
	if d, ok := tty.(deadliner); ok && d.SetReadDeadline(time.Now()) == nil {
		<-ch // the read returns with a timeout
		_ = d.SetReadDeadline(time.Time{})
		return "", ctx.Err()
	}
	t.pending = ch
	return "", ctx.Err()
}

// target renders host:port for prompts.
func target(host string, port int) string {
	return Entry{Host: host, Port: port}.Target()
}
