package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/egress/mitm"
)

const placeholder = "WARDEN-PLACEHOLDER-0001"

// wsEcho upgrades WebSocket requests and echoes raw bytes; other requests
// get echoHandler.
func wsEcho(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		echoHandler(w, r)
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	io.Copy(c, brw)
}

type interceptEnv struct {
	tp     *testProxy
	port   int
	caPool *x509.CertPool
	ca     *mitm.CA
	plain  int // port of a plain HTTP upstream allowed as other.test
}

func newInterceptEnv(t testing.TB, extra func(*Config)) *interceptEnv {
	up := httptest.NewTLSServer(http.HandlerFunc(wsEcho))
	t.Cleanup(up.Close)
	plain := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(plain.Close)
	u, _ := url.Parse(up.URL)
	var port, pport int
	fmt.Sscan(u.Port(), &port)
	pu, _ := url.Parse(plain.URL)
	fmt.Sscan(pu.Port(), &pport)
	ca, err := mitm.New(mitm.Options{Permitted: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())
	cfg := Config{
		Allow: []string{fmt.Sprintf("other.test:%d", pport)},
		Rules: []string{
			fmt.Sprintf("GET example.com:%d/ok/**", port),
			fmt.Sprintf("POST example.com:%d/ok/post", port),
			fmt.Sprintf("GET example.com:%d/ws", port),
		},
		AllowPrivate: true,
		Hosts:        map[string]string{"example.com": "127.0.0.1", "other.test": "127.0.0.1"},
		CA:           ca,
		RootCAs:      roots,
		Credentials: []Credential{{
			Host: "example.com", Header: "Authorization",
			Value: func() string { return "real-secret" }, Placeholder: placeholder,
		}},
	}
	if extra != nil {
		extra(&cfg)
	}
	var tp *testProxy
	if tt, ok := t.(*testing.T); ok {
		tp = startProxy(tt, cfg)
	} else {
		tp = startProxyB(t, cfg)
	}
	caPool := x509.NewCertPool()
	caPool.AddCert(ca.Cert())
	return &interceptEnv{tp: tp, port: port, caPool: caPool, ca: ca, plain: pport}
}

func startProxyB(t testing.TB, cfg Config) *testProxy {
	cfg.Token = testToken
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	t.Cleanup(func() { p.Close() })
	return &testProxy{Proxy: p, addr: l.Addr().String(), audit: &syncBuffer{}}
}

func (e *interceptEnv) client(t testing.TB, h2 bool) *http.Client {
	tr := &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("agent", testToken), Host: e.tp.addr}),
		TLSClientConfig:   &tls.Config{RootCAs: e.caPool},
		ForceAttemptHTTP2: h2,
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestIntercept(t *testing.T) {
	t.Parallel()
	e := newInterceptEnv(t, nil)
	base := fmt.Sprintf("https://example.com:%d", e.port)
	type result struct {
		Code  int
		Deny  string
		Body  string
		Auth  string
		Query string
	}
	tests := []struct {
		name, method, url string
		hdr               map[string]string
		want              result
	}{
		{"allowed", "GET", base + "/ok/x", nil, result{200, "", "hello GET /ok/x", "Bearer real-secret", ""}},
		{"placeholder replaced", "GET", base + "/ok/x?key=" + placeholder, map[string]string{"Authorization": "Bearer " + placeholder}, result{200, "", "hello GET /ok/x", "Bearer real-secret", "key=real-secret"}},
		{"post rule", "POST", base + "/ok/post", nil, result{200, "", "hello POST /ok/post", "Bearer real-secret", ""}},
		{"wrong method", "DELETE", base + "/ok/x", nil, result{403, "method-not-allowed", "", "", ""}},
		{"wrong path", "GET", base + "/gists", nil, result{403, "path-not-allowed", "", "", ""}},
		{"dot path", "GET", base + "/ok/%2e%2e/gists", nil, result{403, "path-not-allowed", "", "", ""}},
		{"placeholder elsewhere", "GET", fmt.Sprintf("http://other.test:%d/x", e.plain), map[string]string{"X-Api-Key": placeholder}, result{403, "credential-scope", "", "", ""}},
		{"placeholder in url elsewhere", "GET", fmt.Sprintf("http://other.test:%d/x?k=%s", e.plain, placeholder), nil, result{403, "credential-scope", "", "", ""}},
		{"other host fine", "GET", fmt.Sprintf("http://other.test:%d/x", e.plain), nil, result{200, "", "hello GET /x", "", ""}},
	}
	for _, h2 := range []bool{false, true} {
		cl := e.client(t, h2)
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/h2=%v", tt.name, h2), func(t *testing.T) {
				req, _ := http.NewRequestWithContext(t.Context(), tt.method, tt.url, nil)
				for k, v := range tt.hdr {
					req.Header.Set(k, v)
				}
				resp, err := cl.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				got := result{resp.StatusCode, resp.Header.Get("X-Warden-Deny"), string(b), resp.Header.Get("X-Seen-Auth"), resp.Header.Get("X-Seen-Query")}
				if tt.want.Code != 200 {
					got.Body = ""
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				if h2 && strings.HasPrefix(tt.url, "https") && resp.ProtoMajor != 2 {
					t.Errorf("proto %s, want HTTP/2", resp.Proto)
				}
			})
		}
	}
}

// tlsTunnel opens CONNECT to target and a TLS session inside it.
func tlsTunnel(t *testing.T, e *interceptEnv, target, sni string) (*tls.Conn, error) {
	t.Helper()
	c, resp := tunnel(t, e.tp.addr, target, testToken)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %d %s", target, resp.StatusCode, resp.Header.Get("X-Warden-Deny"))
	}
	tc := tls.Client(c, &tls.Config{RootCAs: e.caPool, ServerName: sni, NextProtos: []string{"http/1.1"}})
	return tc, tc.HandshakeContext(t.Context())
}

func TestInterceptFronting(t *testing.T) {
	t.Parallel()
	e := newInterceptEnv(t, nil)
	target := fmt.Sprintf("example.com:%d", e.port)
	t.Run("host header", func(t *testing.T) {
		tc, err := tlsTunnel(t, e, target, "example.com")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(tc, "GET /ok/x HTTP/1.1\r\nHost: evil.test\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := statusOf(resp); got != (status{403, "host-mismatch", ""}) {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("absolute form", func(t *testing.T) {
		tc, err := tlsTunnel(t, e, target, "example.com")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(tc, "GET https://evil.test/ok/x HTTP/1.1\r\nHost: %s\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := statusOf(resp); got != (status{403, "host-mismatch", ""}) {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("sni", func(t *testing.T) {
		if _, err := tlsTunnel(t, e, target, "evil.test"); err == nil {
			t.Error("TLS handshake with a foreign SNI succeeded")
		}
	})
}

func TestInterceptWebSocket(t *testing.T) {
	t.Parallel()
	e := newInterceptEnv(t, nil)
	target := fmt.Sprintf("example.com:%d", e.port)
	for _, tt := range []struct {
		path, upgrade string
		want          status
	}{
		{"/ws", "websocket", status{101, "", ""}},
		{"/other", "websocket", status{403, "path-not-allowed", ""}},
		{"/ws", "h2c", status{403, "upgrade-not-allowed", ""}},
	} {
		t.Run(tt.path+"/"+tt.upgrade, func(t *testing.T) {
			tc, err := tlsTunnel(t, e, target, "example.com")
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nSec-WebSocket-Key: x\r\nSec-WebSocket-Version: 13\r\n\r\n", tt.path, target, tt.upgrade)
			br := bufio.NewReader(tc)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := statusOf(resp); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if tt.want.Code != 101 {
				return
			}
			io.WriteString(tc, "ping-frame")
			buf := make([]byte, len("ping-frame"))
			if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping-frame" {
				t.Errorf("echo %q %v", buf, err)
			}
		})
	}
}

func TestInterceptUnavailable(t *testing.T) {
	t.Parallel()
	tp := startProxy(t, Config{
		Rules:        []string{"GET ruled.test/**"},
		AllowPrivate: true,
		Hosts:        map[string]string{"ruled.test": "127.0.0.1"},
	})
	_, resp := tunnel(t, tp.addr, "ruled.test:443", testToken)
	if got := statusOf(resp); got != (status{403, "inspection-unavailable", "GET ruled.test/**"}) {
		t.Errorf("got %+v", got)
	}
}

func TestInterceptSOCKS(t *testing.T) {
	t.Parallel()
	e := newInterceptEnv(t, nil)
	c, err := socksDial(t, e.tp.addr, testToken, fmt.Sprintf("example.com:%d", e.port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{RootCAs: e.caPool, ServerName: "example.com"})
	fmt.Fprintf(tc, "GET /gists HTTP/1.1\r\nHost: example.com:%d\r\n\r\n", e.port)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := statusOf(resp); got != (status{403, "path-not-allowed", ""}) {
		t.Errorf("got %+v", got)
	}
}

func TestInterceptBasicCredential(t *testing.T) {
	t.Parallel()
	e := newInterceptEnv(t, func(c *Config) {
		c.Credentials[0].Basic = true
		c.Credentials[0].Value = func() string { return "x-access-token:tok" }
	})
	resp, err := e.client(t, false).Get(fmt.Sprintf("https://example.com:%d/ok/basic", e.port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get("X-Seen-Auth"), "Basic eC1hY2Nlc3MtdG9rZW46dG9r"; got != want {
		t.Errorf("upstream saw Authorization %q, want %q", got, want)
	}
}

// TestInterceptGoroutineLeaks drives HTTP/1.1, HTTP/2 and WebSocket
// interception, leaves tunnels open, closes the proxy and checks that no
// goroutine stays behind.
func TestInterceptGoroutineLeaks(t *testing.T) {
	skipShort(t)
	before := runtimeGoroutines()
	t.Run("traffic", func(t *testing.T) {
		e := newInterceptEnv(t, nil)
		for _, h2 := range []bool{false, true} {
			cl := e.client(t, h2)
			resp, err := cl.Get(fmt.Sprintf("https://example.com:%d/ok/x", e.port))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			cl.Transport.(*http.Transport).CloseIdleConnections()
		}
		// An open WebSocket and an idle intercepted tunnel.
		c, resp := tunnelNoCleanup(e.tp.addr, fmt.Sprintf("example.com:%d", e.port))
		if resp == nil || resp.StatusCode != 200 {
			t.Fatal("CONNECT failed")
		}
		tc := tls.Client(c, &tls.Config{RootCAs: e.caPool, ServerName: "example.com", NextProtos: []string{"http/1.1"}})
		fmt.Fprintf(tc, "GET /ws HTTP/1.1\r\nHost: example.com:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", e.port)
		if r, err := http.ReadResponse(bufio.NewReader(tc), nil); err != nil || r.StatusCode != 101 {
			t.Fatalf("upgrade: %v %v", r, err)
		}
		c2, _ := tunnelNoCleanup(e.tp.addr, fmt.Sprintf("example.com:%d", e.port))
		_ = c2
	})
	settle(t, before)
}

// flipResolver answers in turn with each of its answers, so a name can
// resolve to a public address when the tunnel is checked and to a private
// one when the upstream connection is dialled.
type flipResolver struct {
	n       atomic.Int32
	answers [][]netip.Addr
}

func (r *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	i := int(r.n.Add(1)-1) % len(r.answers)
	return slices.Clone(r.answers[i]), nil
}

// TestInterceptRebinding: an intercepted tunnel is checked when it opens,
// but the upstream connection for a request inside it is resolved and
// checked again, and only a checked address is dialled. A name that
// rebinds to loopback in between (DNS rebinding) is refused with
// private-destination; a name that stays public goes through.
func TestInterceptRebinding(t *testing.T) {
	t.Parallel()
	public := []netip.Addr{netip.MustParseAddr("93.184.216.34")}
	tests := []struct {
		name    string
		answers [][]netip.Addr
		want    status
		dials   int
	}{
		{"stays public", [][]netip.Addr{public}, status{200, "", ""}, 1},
		{"rebinds to loopback", [][]netip.Addr{public, {netip.MustParseAddr("127.0.0.1")}}, status{403, ReasonPrivateDestination, ""}, 0},
		{"rebinds to private", [][]netip.Addr{public, {netip.MustParseAddr("10.0.0.7")}}, status{403, ReasonPrivateDestination, ""}, 0},
		{"rebinds to mixed", [][]netip.Addr{public, {public[0], netip.MustParseAddr("::1")}}, status{403, ReasonPrivateDestination, ""}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := &flipResolver{answers: tt.answers}
			var mu sync.Mutex
			var dialed []string
			var e *interceptEnv
			e = newInterceptEnv(t, func(c *Config) {
				c.AllowPrivate = false
				c.Hosts = nil // example.com goes to the Resolver
				c.Resolver = res
				c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
					mu.Lock()
					dialed = append(dialed, addr)
					mu.Unlock()
					// Every address that passed the check stands in for the
					// loopback upstream.
					var d net.Dialer
					return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", e.port))
				}
			})
			resp, err := e.client(t, false).Get(fmt.Sprintf("https://example.com:%d/ok/rebind", e.port))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if diff := cmp.Diff(tt.want, statusOf(resp)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got := res.n.Load(); got != 2 {
				t.Errorf("%d lookups, want 2 (tunnel check, upstream dial)", got)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{}
			for range tt.dials {
				want = append(want, fmt.Sprintf("93.184.216.34:%d", e.port))
			}
			if diff := cmp.Diff(want, append([]string{}, dialed...)); diff != "" {
				t.Errorf("dials (-want +got):\n%s", diff)
			}
		})
	}
}
