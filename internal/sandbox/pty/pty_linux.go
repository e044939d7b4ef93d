// Package pty hands the user's terminal to a sandboxed program through a
// fresh pseudo-terminal.
//
// The sandbox must not share the user's terminal: a program holding it
// could inject input with TIOCSTI (threat B7) or keep reading after warden
// exits. warden instead allocates a new pty pair, gives the sandbox the
// follower side as its controlling terminal, puts the user's terminal in
// raw mode and copies bytes both ways. Window size changes are forwarded,
// so the kernel signals SIGWINCH inside; Ctrl-C and Ctrl-Z reach the
// program through the pty's own line discipline (job control).
package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Session is one pty handed to a sandbox.
type Session struct {
	// Follower is the pty's follower side: the sandbox's stdin, stdout and
	// stderr. Close it once the sandbox has started.
	Follower *os.File

	leader   *os.File
	term     *os.File
	out      io.Writer
	restore  *unix.Termios
	winch    chan os.Signal
	outDone  chan struct{}
	closeOne sync.Once

	// outGate is held while a prompt owns the terminal: the sandbox's
	// output waits (in the pty's buffer) instead of overwriting it.
	outGate sync.Mutex
	mu      sync.Mutex
	prompt  *promptIO // non-nil while a prompt owns the input
}

// Open allocates a pty sized like term (the user's terminal, also where
// input is read) and starts copying: term → pty, pty → out.
func Open(term *os.File, out io.Writer) (*Session, error) {
	leader, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pty: %w", err)
	}
	lfd := int(leader.Fd())
	if err := unix.IoctlSetPointerInt(lfd, unix.TIOCSPTLCK, 0); err != nil {
		leader.Close()
		return nil, fmt.Errorf("pty: unlock: %w", err)
	}
	n, err := unix.IoctlGetUint32(lfd, unix.TIOCGPTN)
	if err != nil {
		leader.Close()
		return nil, fmt.Errorf("pty: number: %w", err)
	}
	follower, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		leader.Close()
		return nil, fmt.Errorf("pty: open follower: %w", err)
	}
	s := &Session{Follower: follower, leader: leader, term: term, out: out, winch: make(chan os.Signal, 1), outDone: make(chan struct{})}
	s.resize()
	tfd := int(term.Fd())
	if old, err := unix.IoctlGetTermios(tfd, unix.TCGETS); err == nil {
		raw := *old
		makeRaw(&raw)
		if err := unix.IoctlSetTermios(tfd, unix.TCSETS, &raw); err == nil {
			s.restore = old
		}
	}
	signal.Notify(s.winch, unix.SIGWINCH)
	go func() {
		for range s.winch {
			s.resize()
		}
	}()
	go s.input()
	go func() {
		defer close(s.outDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := leader.Read(buf)
			if n > 0 {
				s.outGate.Lock()
				_, werr := out.Write(buf[:n])
				s.outGate.Unlock()
				if werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return s, nil
}

// input copies the user's keystrokes to the pty, or to the prompt that
// owns the terminal. It ends when warden exits (the user's terminal is not
// closed under a blocked read).
func (s *Session) input() {
	buf := make([]byte, 4096)
	for {
		n, err := s.term.Read(buf)
		if n > 0 {
			s.mu.Lock()
			p := s.prompt
			s.mu.Unlock()
			if p != nil {
				p.feed(buf[:n])
			} else if _, err := s.leader.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// ErrBusy is returned by Prompt while another prompt owns the terminal.
var ErrBusy = errors.New("pty: the terminal is already prompting")

// Prompt lends the user's terminal to warden itself (an egress prompt)
// while the sandbox runs: until the returned handle is closed, keystrokes
// go to it instead of the sandbox, and the sandbox's output is held back
// so it cannot overwrite the question. Reads honour SetReadDeadline.
// Closing it hands the terminal back and makes the sandbox redraw.
func (s *Session) Prompt() (io.ReadWriteCloser, error) {
	s.mu.Lock()
	if s.prompt != nil {
		s.mu.Unlock()
		return nil, ErrBusy
	}
	p := &promptIO{s: s, data: make(chan []byte, 64), closed: make(chan struct{}), kick: make(chan struct{}, 1)}
	s.prompt = p
	s.mu.Unlock()
	s.outGate.Lock()
	return p, nil
}

// promptIO is the terminal on loan to a prompt.
type promptIO struct {
	s      *Session
	data   chan []byte
	closed chan struct{}
	kick   chan struct{}
	once   sync.Once

	mu       sync.Mutex
	pending  []byte
	deadline time.Time
}

func (p *promptIO) feed(b []byte) {
	select {
	case p.data <- append([]byte(nil), b...):
	case <-p.closed:
	default: // a flood while prompting is dropped, not queued into the sandbox
	}
}

func (p *promptIO) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if len(p.pending) > 0 {
			n := copy(b, p.pending)
			p.pending = p.pending[n:]
			p.mu.Unlock()
			p.echo(b[:n])
			return n, nil
		}
		dl := p.deadline
		p.mu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			t = time.NewTimer(d)
			timeout = t.C
		}
		var err error
		select {
		case in := <-p.data:
			p.mu.Lock()
			p.pending = append(p.pending, in...)
			p.mu.Unlock()
		case <-p.closed:
			err = io.EOF
		case <-timeout:
			err = os.ErrDeadlineExceeded
		case <-p.kick:
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return 0, err
		}
	}
}

// echo shows what the user types (the terminal is in raw mode).
func (p *promptIO) echo(b []byte) {
	for _, c := range b {
		switch {
		case c == '\r' || c == '\n':
			_, _ = io.WriteString(p.s.out, "\r\n")
		case c >= 0x20 && c < 0x7f:
			_, _ = p.s.out.Write([]byte{c})
		}
	}
}

// SetReadDeadline makes a pending or later Read return
// os.ErrDeadlineExceeded at t; the zero time clears it.
func (p *promptIO) SetReadDeadline(t time.Time) error {
	p.mu.Lock()
	p.deadline = t
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return nil
}

// Write goes to the user's terminal.
func (p *promptIO) Write(b []byte) (int, error) { return p.s.out.Write(b) }

// Close hands the terminal back to the sandbox and nudges it to redraw.
func (p *promptIO) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.s.mu.Lock()
		p.s.prompt = nil
		p.s.mu.Unlock()
		p.s.outGate.Unlock()
		p.s.redraw()
	})
	return nil
}

// redraw makes full-screen programs repaint: a size change and back sends
// SIGWINCH to the pty's foreground process group.
func (s *Session) redraw() {
	ws, err := unix.IoctlGetWinsize(int(s.leader.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col < 2 {
		return
	}
	tmp := *ws
	tmp.Col--
	_ = unix.IoctlSetWinsize(int(s.leader.Fd()), unix.TIOCSWINSZ, &tmp)
	_ = unix.IoctlSetWinsize(int(s.leader.Fd()), unix.TIOCSWINSZ, ws)
}

// resize copies the user's terminal size to the pty; the kernel then sends
// SIGWINCH to the pty's foreground process group.
func (s *Session) resize() {
	ws, err := unix.IoctlGetWinsize(int(s.term.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	_ = unix.IoctlSetWinsize(int(s.leader.Fd()), unix.TIOCSWINSZ, ws)
}

// Close waits for the sandbox's remaining output, then restores the user's
// terminal. Call it after the sandbox has exited.
func (s *Session) Close() error {
	var err error
	s.closeOne.Do(func() {
		signal.Stop(s.winch)
		close(s.winch)
		_ = s.Follower.Close()
		// Every follower descriptor is gone with the sandbox, so the
		// leader reads EIO once the output is drained.
		select {
		case <-s.outDone:
		case <-time.After(2 * time.Second): // a stray holder of the follower
		}
		err = s.leader.Close()
		if s.restore != nil {
			err = errors.Join(err, unix.IoctlSetTermios(int(s.term.Fd()), unix.TCSETS, s.restore))
		}
	})
	return err
}

// makeRaw is cfmakeraw(3).
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}
