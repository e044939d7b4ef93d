package prompt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTTY reads from r and records what is written.
type fakeTTY struct {
	r  io.Reader
	mu sync.Mutex
	w  bytes.Buffer
}

func (f *fakeTTY) Read(p []byte) (int, error) { return f.r.Read(p) }

func (f *fakeTTY) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

func (f *fakeTTY) output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.String()
}

const question = "warden: allow network access to api.example.com:443? [o]nce / [a]lways / [s]ite (always *.example.com) / [d]eny / [n]ever (deny always)"

func TestTerminalAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Answer
		prompts int
	}{
		{"once", "o\n", AnswerOnce, 1},
		{"always", "a\n", AnswerAlways, 1},
		{"deny", "d\n", AnswerDeny, 1},
		{"never", "n\n", AnswerNever, 1},
		{"site", "s\n", AnswerSite, 1},
		{"word and case", "  Always \n", AnswerAlways, 1},
		{"raw mode enter", "o\r", AnswerOnce, 1},
		{"garbage asks again", "yes\n\nx\nn\n", AnswerNever, 4},
		{"escape sequence asks again", "\x1b[A\na\n", AnswerAlways, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tty := &fakeTTY{r: strings.NewReader(tc.in + "o\n")}
			a, err := (&Terminal{TTY: tty, Timeout: 5 * time.Second}).Ask(t.Context(), "api.example.com", 443)
			if err != nil {
				t.Fatal(err)
			}
			if a != tc.want {
				t.Errorf("answer %v, want %v", a, tc.want)
			}
			out := tty.output()
			if n := strings.Count(out, question); n != tc.prompts {
				t.Errorf("%d prompts, want %d:\n%s", n, tc.prompts, out)
			}
			if !strings.Contains(out, "warden: api.example.com:443: "+tc.want.String()) {
				t.Errorf("answer not echoed:\n%s", out)
			}
			// Nothing after the answer was consumed.
			rest, _ := io.ReadAll(tty.r)
			if string(rest) != "o\n" {
				t.Errorf("read past the answer; left %q", rest)
			}
		})
	}
}

func TestTerminalTimeout(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	tty := &fakeTTY{r: pr}
	term := &Terminal{TTY: tty, Timeout: 50 * time.Millisecond}
	a, err := term.Ask(t.Context(), "api.example.com", 443)
	if !errors.Is(err, ErrTimeout) || a != AnswerDeny {
		t.Fatalf("Ask = %v, %v; want deny, ErrTimeout", a, err)
	}
	if !strings.Contains(tty.output(), "no answer; denied") {
		t.Errorf("output:\n%s", tty.output())
	}
	// The read left pending by the timeout serves the next prompt; no
	// second reader races it.
	term.Timeout = 5 * time.Second
	go func() { _, _ = io.WriteString(pw, "a\n") }()
	a, err = term.Ask(t.Context(), "api.example.com", 443)
	if err != nil || a != AnswerAlways {
		t.Fatalf("second Ask = %v, %v; want always", a, err)
	}
}

func TestTerminalContextCancelled(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	a, err := (&Terminal{TTY: &fakeTTY{r: pr}}).Ask(ctx, "api.example.com", 443)
	if err == nil || errors.Is(err, ErrTimeout) || a != AnswerDeny {
		t.Fatalf("Ask = %v, %v; want deny with context error", a, err)
	}
}

func TestTerminalReadError(t *testing.T) {
	t.Parallel()
	a, err := (&Terminal{TTY: &fakeTTY{r: strings.NewReader("")}}).Ask(t.Context(), "api.example.com", 443)
	if err == nil || a != AnswerDeny {
		t.Fatalf("Ask at EOF = %v, %v; want deny with an error", a, err)
	}
}

func TestTerminalNoTTY(t *testing.T) {
	t.Parallel()
	term := &Terminal{Open: func() (io.ReadWriteCloser, error) { return nil, errors.New("no tty") }}
	if a, err := term.Ask(t.Context(), "api.example.com", 443); err == nil || a != AnswerDeny {
		t.Fatalf("Ask = %v, %v", a, err)
	}
}

func TestTerminalRefusesNonCanonicalHost(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"API.example.com", "evil.test\x1b[2J", "a b", "", "example.com."} {
		tty := &fakeTTY{r: strings.NewReader("a\n")}
		if a, err := (&Terminal{TTY: tty}).Ask(t.Context(), h, 443); err == nil || a != AnswerDeny {
			t.Errorf("%q: Ask = %v, %v; want refusal", h, a, err)
		}
		if tty.output() != "" {
			t.Errorf("%q: printed %q", h, tty.output())
		}
	}
}

// TestTerminalSerialised checks that concurrent prompts never interleave:
// each question is followed by its own answer before the next question.
func TestTerminalSerialised(t *testing.T) {
	t.Parallel()
	tty := &fakeTTY{r: strings.NewReader("o\nd\no\nd\n")}
	term := &Terminal{TTY: tty, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := term.Ask(t.Context(), "api.example.com", 443); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	out := tty.output()
	if n := strings.Count(out, question); n != 4 {
		t.Fatalf("%d prompts, want 4:\n%s", n, out)
	}
	for i, part := range strings.Split(out, question)[1:] {
		if strings.Count(part, "warden: api.example.com:443: ") != 1 {
			t.Errorf("prompt %d not followed by exactly one answer: %q", i, part)
		}
	}
}

// pipeTTY reads from a pipe, which like a terminal supports read
// deadlines, and records writes.
type pipeTTY struct {
	*os.File
	out fakeTTY
}

func (p *pipeTTY) Write(b []byte) (int, error)       { return p.out.Write(b) }
func (p *pipeTTY) WriteString(s string) (int, error) { return p.out.Write([]byte(s)) }

// TestTerminalDeadlineInterruptsRead: on a terminal with read deadlines a
// timed-out prompt stops reading at once, so no keystroke meant for the
// agent is taken between prompts.
func TestTerminalDeadlineInterruptsRead(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	term := &Terminal{TTY: &pipeTTY{File: r}, Timeout: 50 * time.Millisecond}
	if a, err := term.Ask(t.Context(), "api.example.com", 443); !errors.Is(err, ErrTimeout) || a != AnswerDeny {
		t.Fatalf("Ask = %v, %v; want ErrTimeout", a, err)
	}
	if term.pending != nil {
		t.Fatal("a read is still pending after the deadline")
	}
	if _, err := io.WriteString(w, "x"); err != nil {
		t.Fatal(err)
	}
	// The byte is still in the pipe: nobody read it.
	_ = r.SetReadDeadline(time.Now().Add(time.Second))
	var b [1]byte
	if n, err := r.Read(b[:]); n != 1 || b[0] != 'x' {
		t.Fatalf("read %q, %v; the prompt consumed input after it ended", b[:n], err)
	}
	_ = r.SetReadDeadline(time.Time{})
	term.Timeout = 5 * time.Second
	go func() { _, _ = io.WriteString(w, "n\n") }()
	if a, err := term.Ask(t.Context(), "api.example.com", 443); err != nil || a != AnswerNever {
		t.Fatalf("Ask after a timeout = %v, %v; want never", a, err)
	}
}

// TestTerminalNoSiteForIPs: an IP or a public suffix has no site, so the
// site answer is neither offered nor accepted.
func TestTerminalNoSiteForIPs(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"192.0.2.7", "localhost", "co.uk"} {
		tty := &fakeTTY{r: strings.NewReader("s\nd\n")}
		a, err := (&Terminal{TTY: tty, Timeout: 5 * time.Second}).Ask(t.Context(), host, 443)
		if err != nil {
			t.Fatal(err)
		}
		if a != AnswerDeny || strings.Contains(tty.output(), "[s]ite") {
			t.Errorf("%s: answer %v, output:\n%s", host, a, tty.output())
		}
	}
}
