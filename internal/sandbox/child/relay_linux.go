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
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go relay(c, rl.Unix)
		}
	}()
	return nil
}

func relay(c net.Conn, path string) {
	defer c.Close()
	d := net.Dialer{Timeout: 5 * time.Second}
	u, err := d.Dial("unix", path)
	if err != nil {
		return
	}
	defer u.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(u, c)
		if uc, ok := u.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	})
	_, _ = io.Copy(c, u)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	wg.Wait()
}
