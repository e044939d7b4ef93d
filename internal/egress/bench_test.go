package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// sizedHandler answers GET /<n> with n bytes.
func sizedHandler(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
	w.Header().Set("Content-Length", strconv.Itoa(n))
	buf := make([]byte, 32<<10)
	for n > 0 {
		k := min(n, len(buf))
		w.Write(buf[:k])
		n -= k
	}
}

func fetchOnConn(b *testing.B, c net.Conn, br *bufio.Reader, size int) {
	fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\n\r\n", size)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != int64(size) {
		b.Fatalf("read %d of %d: %v", n, size, err)
	}
}

// BenchmarkConnect fetches through a fresh CONNECT tunnel per request and,
// for comparison, over a fresh direct connection.
func BenchmarkConnect(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(sizedHandler))
	defer up.Close()
	upAddr := up.Listener.Addr().String()
	_, portStr, _ := net.SplitHostPort(upAddr)
	tp := startProxyB(b, Config{
		Allow:        []string{"bench.test:" + portStr},
		AllowPrivate: true,
		Hosts:        map[string]string{"bench.test": "127.0.0.1"},
	})
	connectReq := fmt.Sprintf("CONNECT bench.test:%s HTTP/1.1\r\nHost: bench.test:%s\r\nProxy-Authorization: %s\r\n\r\n", portStr, portStr, authHeader(testToken))
	for _, size := range []int{12, 1 << 20} {
		b.Run(fmt.Sprintf("direct/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				c, err := net.Dial("tcp", upAddr)
				if err != nil {
					b.Fatal(err)
				}
				fetchOnConn(b, c, bufio.NewReader(c), size)
				c.Close()
			}
		})
		b.Run(fmt.Sprintf("connect/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				c, err := net.Dial("tcp", tp.addr)
				if err != nil {
					b.Fatal(err)
				}
				io.WriteString(c, connectReq)
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("CONNECT: %v %v", resp, err)
				}
				fetchOnConn(b, c, br, size)
				c.Close()
			}
		})
	}
}

// BenchmarkIntercepted measures an intercepted HTTPS request on a new
// tunnel with leaf minting (first-request), with a cached leaf
// (cached-leaf), and on a kept-alive tunnel (keepalive).
func BenchmarkIntercepted(b *testing.B) {
	e := newInterceptEnv(b, nil)
	url := fmt.Sprintf("https://example.com:%d/ok/bench", e.port)
	get := func(b *testing.B, cl *http.Client) {
		resp, err := cl.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	fresh := func(b *testing.B) *http.Client {
		cl := e.client(b, false)
		cl.Transport.(*http.Transport).DisableKeepAlives = true
		return cl
	}
	b.Run("first-request", func(b *testing.B) {
		cl := fresh(b)
		for b.Loop() {
			e.ca.ResetCache()
			get(b, cl)
		}
	})
	b.Run("cached-leaf", func(b *testing.B) {
		cl := fresh(b)
		get(b, cl)
		for b.Loop() {
			get(b, cl)
		}
	})
	b.Run("keepalive", func(b *testing.B) {
		cl := e.client(b, false)
		get(b, cl)
		for b.Loop() {
			get(b, cl)
		}
	})
}
