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
	restore  *unix.Termios
	winch    chan os.Signal
	outDone  chan struct{}
	closeOne sync.Once
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
	s := &Session{Follower: follower, leader: leader, term: term, winch: make(chan os.Signal, 1), outDone: make(chan struct{})}
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
	go func() {
		// Input: ends when warden exits (the user's terminal is not
		// closed under a blocked read).
		_, _ = io.Copy(leader, term)
	}()
	go func() {
		defer close(s.outDone)
		_, _ = io.Copy(out, leader)
	}()
	return s, nil
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
