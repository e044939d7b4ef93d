//go:build linux

package child

import (
	"context"
	"io"
	"net"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/sandbox"
)

// startRelay listens on rl.Listen, the sandbox's own loopback, and copies
// each connection to and from a fresh connection to rl.Unix, a socket the
// host serves. This is the only way out of an empty network namespace.
func startRelay(rl sandbox.Relay) error {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", rl.Listen)
	if err != nil {
		return err
	}
	go acceptLoop(l, "unix", rl.Unix)
	return nil
}

// startExpose listens on ex.Unix (in a directory the host bound in) and
// copies each connection to and from a fresh TCP connection to ex.TCP in
// the sandbox's own network namespace.
func startExpose(ex sandbox.Expose) error {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "unix", ex.Unix)
	if err != nil {
		return err
	}
	go acceptLoop(l, "tcp", ex.TCP)
	return nil
}

// acceptLoop relays every connection l accepts to a fresh connection to
// network addr, until l fails.
func acceptLoop(l net.Listener, network, addr string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go relay(c, network, addr)
	}
}

func relay(c net.Conn, network, addr string) {
	defer c.Close()
	d := net.Dialer{Timeout: 5 * time.Second}
	u, err := d.Dial(network, addr)
	if err != nil {
		return
	}
	defer u.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(u, c)
		closeWrite(u)
	})
	_, _ = io.Copy(c, u)
	closeWrite(c)
	wg.Wait()
}

// closeWrite half-closes a TCP or Unix connection.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
