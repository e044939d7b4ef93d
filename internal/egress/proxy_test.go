package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/proxy"
)

const testToken = "s3ssion-t0ken"

// syncBuffer is an io.Writer safe for the proxy's concurrent audit writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []auditRecord {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auditRecord
	for line := range strings.SplitSeq(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var r auditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

type testProxy struct {
	*Proxy
	addr  string
	audit *syncBuffer
}

// startProxy serves cfg on a loopback TCP listener until the test ends.
func startProxy(t *testing.T, cfg Config) *testProxy {
	t.Helper()
	skipShort(t)
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	ab := &syncBuffer{}
	cfg.Audit = ab
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return &testProxy{Proxy: p, addr: l.Addr().String(), audit: ab}
}

// skipShort skips tests that open listeners under -short.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("opens loopback listeners; skipped with -short")
	}
}

func authHeader(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("agent:"+token))
}

// rawExchange writes req on a fresh connection and reads one response.
func rawExchange(t *testing.T, addr, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(req)[0]})
	for err == nil && resp.StatusCode == http.StatusContinue {
		resp, err = http.ReadResponse(br, &http.Request{Method: strings.Fields(req)[0]})
	}
	if err != nil {
		t.Fatalf("reading response to %q: %v", req, err)
	}
	var body []byte
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(req, "CONNECT") {
		body, _ = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	return resp, string(body)
}

func portOf(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(u.Port())
	return n
}

// echoHandler answers with what it saw.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Seen-Host", r.Host)
	w.Header().Set("X-Seen-Auth", r.Header.Get("Authorization"))
	w.Header().Set("X-Seen-Proxy-Auth", r.Header.Get("Proxy-Authorization"))
	w.Header().Set("X-Seen-Query", r.URL.RawQuery)
	fmt.Fprintf(w, "hello %s %s", r.Method, r.URL.Path)
}

type status struct {
	Code int
	Deny string
	Rule string
}

func statusOf(r *http.Response) status {
	return status{r.StatusCode, r.Header.Get("X-Warden-Deny"), r.Header.Get("X-Warden-Rule")}
}

func TestHTTPForward(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(up.Close)
	port := portOf(t, up.URL)
	tp := startProxy(t, Config{
		Allow:        []string{fmt.Sprintf("allowed.test:%d", port), fmt.Sprintf("ruled.test:%d", port)},
		Deny:         []string{"denied.test"},
		Rules:        []string{fmt.Sprintf("GET ruled.test:%d/ok/**", port)},
		AllowPrivate: true,
		Hosts:        map[string]string{"allowed.test": "127.0.0.1", "ruled.test": "127.0.0.1", "denied.test": "127.0.0.1"},
	})
	auth := "Proxy-Authorization: " + authHeader(testToken) + "\r\n"
	tests := []struct {
		name string
		req  string
		want status
		body string
	}{
		{"allowed", fmt.Sprintf("GET http://allowed.test:%d/x HTTP/1.1\r\nHost: allowed.test:%d\r\n%s\r\n", port, port, auth), status{200, "", ""}, "hello GET /x"},
		{"no token", fmt.Sprintf("GET http://allowed.test:%d/x HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", port, port), status{407, "proxy-auth-required", ""}, ""},
		{"wrong token", fmt.Sprintf("GET http://allowed.test:%d/x HTTP/1.1\r\nHost: allowed.test:%d\r\nProxy-Authorization: %s\r\n\r\n", port, port, authHeader("nope")), status{407, "proxy-auth-required", ""}, ""},
		{"not allowed", "GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n" + auth + "\r\n", status{403, "host-not-allowed", ""}, `add "other.test" to network.allow`},
		{"denied", "GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n" + auth + "\r\n", status{403, "host-denied", "denied.test"}, ""},
		{"wrong port", "GET http://allowed.test:81/ HTTP/1.1\r\nHost: allowed.test:81\r\n" + auth + "\r\n", status{403, "port-not-allowed", fmt.Sprintf("allowed.test:%d", port)}, ""},
		{"host mismatch", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: evil.test\r\n%s\r\n", port, auth), status{403, "host-mismatch", ""}, ""},
		{"host missing", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\n%s\r\n", port, auth), status{400, "invalid-request", ""}, ""},
		{"userinfo", fmt.Sprintf("GET http://allowed.test:%d@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n%s\r\n", port, auth), status{400, "invalid-request", ""}, ""},
		{"origin form", "GET / HTTP/1.1\r\nHost: allowed.test\r\n" + auth + "\r\n", status{400, "invalid-request", ""}, ""},
		{"rule ok", fmt.Sprintf("GET http://ruled.test:%d/ok/1 HTTP/1.1\r\nHost: ruled.test:%d\r\n%s\r\n", port, port, auth), status{200, "", ""}, "hello GET /ok/1"},
		{"rule method", fmt.Sprintf("POST http://ruled.test:%d/ok/1 HTTP/1.1\r\nHost: ruled.test:%d\r\nContent-Length: 0\r\n%s\r\n", port, port, auth), status{403, "method-not-allowed", fmt.Sprintf("GET ruled.test:%d/ok/**", port)}, ""},
		{"rule path", fmt.Sprintf("GET http://ruled.test:%d/other HTTP/1.1\r\nHost: ruled.test:%d\r\n%s\r\n", port, port, auth), status{403, "path-not-allowed", ""}, ""},
		{"dot segments", fmt.Sprintf("GET http://ruled.test:%d/ok/../other HTTP/1.1\r\nHost: ruled.test:%d\r\n%s\r\n", port, port, auth), status{403, "path-not-allowed", ""}, ""},
		{"encoded dot segments", fmt.Sprintf("GET http://ruled.test:%d/ok/%%2e%%2e/other HTTP/1.1\r\nHost: ruled.test:%d\r\n%s\r\n", port, port, auth), status{403, "path-not-allowed", ""}, ""},
		{"legacy ip", "GET http://2130706433/ HTTP/1.1\r\nHost: 2130706433\r\n" + auth + "\r\n", status{403, "host-not-allowed", ""}, `"127.0.0.1"`},
		{"metadata name", "GET http://metadata.google.internal/ HTTP/1.1\r\nHost: metadata.google.internal\r\n" + auth + "\r\n", status{403, "metadata-destination", ""}, ""},
		{"h2c upgrade", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n%s\r\n", port, port, auth), status{403, "upgrade-not-allowed", ""}, ""},
		{"expect continue", fmt.Sprintf("POST http://allowed.test:%d/e HTTP/1.1\r\nHost: allowed.test:%d\r\nExpect: 100-continue\r\nContent-Length: 2\r\n%s\r\nhi", port, port, auth), status{200, "", ""}, "hello POST /e"},
		{"huge header", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nX: %s\r\n%s\r\n", port, port, strings.Repeat("a", 70<<10), auth), status{431, "invalid-request", ""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := rawExchange(t, tp.addr, tt.req)
			if diff := cmp.Diff(tt.want, statusOf(resp)); diff != "" {
				t.Errorf("(-want +got):\n%s\nbody: %s", diff, body)
			}
			if !strings.Contains(body, tt.body) {
				t.Errorf("body %q does not contain %q", body, tt.body)
			}
			if tt.want.Code == 200 && resp.Header.Get("X-Seen-Proxy-Auth") != "" {
				t.Error("Proxy-Authorization leaked upstream")
			}
		})
	}
}

// TestHTTPKeepAlive decides every request on one client connection.
func TestHTTPKeepAlive(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(up.Close)
	port := portOf(t, up.URL)
	tp := startProxy(t, Config{
		Allow:        []string{fmt.Sprintf("allowed.test:%d", port)},
		Rules:        []string{fmt.Sprintf("GET ruled.test:%d/ok", port)},
		AllowPrivate: true,
		Hosts:        map[string]string{"allowed.test": "127.0.0.1", "ruled.test": "127.0.0.1"},
	})
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	auth := "Proxy-Authorization: " + authHeader(testToken) + "\r\n"
	steps := []struct {
		target string
		want   int
	}{
		{fmt.Sprintf("allowed.test:%d/a", port), 200},
		{fmt.Sprintf("ruled.test:%d/ok", port), 200},
		{fmt.Sprintf("ruled.test:%d/no", port), 403},
		{"other.test/", 403},
		{fmt.Sprintf("allowed.test:%d/b", port), 200},
	}
	for _, s := range steps {
		host, _, _ := strings.Cut(s.target, "/")
		fmt.Fprintf(c, "GET http://%s HTTP/1.1\r\nHost: %s\r\n%s\r\n", s.target, host, auth)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", s.target, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != s.want {
			t.Errorf("%s: status %d, want %d", s.target, resp.StatusCode, s.want)
		}
	}
}

func TestHTTPClientThroughProxy(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(up.Close)
	port := portOf(t, up.URL)
	tp := startProxy(t, Config{
		Allow:        []string{fmt.Sprintf("allowed.test:%d", port)},
		AllowPrivate: true,
		Hosts:        map[string]string{"allowed.test": "127.0.0.1"},
	})
	proxyURL := &url.URL{Scheme: "http", User: url.UserPassword("agent", testToken), Host: tp.addr}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	t.Cleanup(tr.CloseIdleConnections)
	cl := &http.Client{Transport: tr}
	for i := range 3 {
		resp, err := cl.Get(fmt.Sprintf("http://allowed.test:%d/n%d", port, i))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("hello GET /n%d", i); string(b) != want {
			t.Errorf("got %q, want %q", b, want)
		}
	}
	recs := tp.audit.records(t)
	if len(recs) != 3 || recs[0].Kind != "http" || recs[0].Decision != "allow" || recs[0].Host != "allowed.test" || recs[0].Path != "/n0" {
		t.Errorf("audit records: %+v", recs)
	}
}

// tunnel opens a CONNECT tunnel and returns the conn and the response.
func tunnel(t *testing.T, addr, target, token string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if token != "" {
		req += "Proxy-Authorization: " + authHeader(token) + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %q: %v", target, err)
	}
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return &bufConn{Conn: c, r: br}, resp
}

func TestConnect(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(up.Close)
	port := portOf(t, up.URL)
	tp := startProxy(t, Config{
		Allow:        []string{fmt.Sprintf("allowed.test:%d", port), "*.wild.test:443", "private.test:*"},
		Deny:         []string{"no.wild.test"},
		AllowPrivate: false,
		Hosts:        map[string]string{"allowed.test": "127.0.0.1", "private.test": "10.0.0.1"},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, up.Listener.Addr().String())
		},
	})
	// allowed.test resolves to loopback: refused without AllowPrivate.
	tests := []struct {
		target string
		token  string
		want   status
	}{
		{fmt.Sprintf("allowed.test:%d", port), testToken, status{403, "private-destination", ""}},
		{"private.test:5432", testToken, status{403, "private-destination", ""}},
		{fmt.Sprintf("allowed.test:%d", port), "", status{407, "proxy-auth-required", ""}},
		{"x.wild.test:443", "wrong", status{407, "proxy-auth-required", ""}},
		{"wild.test:443", testToken, status{403, "host-not-allowed", ""}},
		{"no.wild.test:443", testToken, status{403, "host-denied", "no.wild.test"}},
		{"x.wild.test:22", testToken, status{403, "port-not-allowed", "*.wild.test:443"}},
		{"x.wild.test.evil.test:443", testToken, status{403, "host-not-allowed", ""}},
		{"evilwild.test:443", testToken, status{403, "host-not-allowed", ""}},
		{"x.wild.test", testToken, status{403, "invalid-host", ""}},
		{"x.wild.test:0443", testToken, status{403, "invalid-host", ""}},
		{"allowed.test@x.wild.test:443", testToken, status{403, "invalid-host", ""}},
		{"x.wild.test\\@evil:443", testToken, status{400, "invalid-request", ""}},
		{"evil.test%00.x.wild.test:443", testToken, status{400, "invalid-request", ""}},
		{"evil.test\x00.x.wild.test:443", testToken, status{400, "invalid-request", ""}},
		{"x.wild.test:443\r\nX-Injected: 1", testToken, status{400, "invalid-request", ""}},
		{"metadata.google.internal:80", testToken, status{403, "metadata-destination", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			t.Parallel()
			_, resp := tunnel(t, tp.addr, tt.target, tt.token)
			if diff := cmp.Diff(tt.want, statusOf(resp)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("allowed public", func(t *testing.T) {
		t.Parallel()
		tp := startProxy(t, Config{
			Allow:    []string{"x.wild.test:443"},
			Resolver: staticResolver{"x.wild.test": {netip.MustParseAddr("93.184.216.34")}},
			Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr != "93.184.216.34:443" {
					return nil, fmt.Errorf("dial to unexpected %s", addr)
				}
				var d net.Dialer
				return d.DialContext(ctx, network, up.Listener.Addr().String())
			},
		})
		c, resp := tunnel(t, tp.addr, "X.Wild.Test.:443", testToken)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		fmt.Fprintf(c, "GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		if !bytes.Contains(b, []byte("hello GET /through")) {
			t.Errorf("tunnel response %q", b)
		}
	})
}

type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// rebindResolver answers with a public address first, then loopback.
type rebindResolver struct{ n atomic.Int32 }

func (r *rebindResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if r.n.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}, nil
}

func TestRebinding(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(up.Close)
	var dialed []string
	var mu sync.Mutex
	tp := startProxy(t, Config{
		Allow:    []string{"rebind.test:443"},
		Resolver: &rebindResolver{},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, up.Listener.Addr().String())
		},
	})
	_, resp := tunnel(t, tp.addr, "rebind.test:443", testToken)
	if resp.StatusCode != 200 {
		t.Fatalf("first CONNECT: %d", resp.StatusCode)
	}
	_, resp = tunnel(t, tp.addr, "rebind.test:443", testToken)
	if got := statusOf(resp); got != (status{403, "private-destination", ""}) {
		t.Fatalf("second CONNECT: %+v", got)
	}
	var got []string
	for _, r := range tp.audit.records(t) {
		if r.Time == "" {
			t.Error("audit record without time")
		}
		got = append(got, fmt.Sprintf("%s %s:%d %s %s %s", r.Kind, r.Host, r.Port, r.Decision, r.Reason, r.Rule))
	}
	want := []string{
		"connect rebind.test:443 allow host-allowed rebind.test:443",
		"connect rebind.test:443 allow host-allowed rebind.test:443",
		"connect rebind.test:443 deny private-destination ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"93.184.216.34:443"}, dialed); diff != "" {
		t.Errorf("dials (-want +got):\n%s", diff)
	}
}

// TestIPLiterals: even when the prompt allows anything, encoded loopback,
// unspecified and metadata addresses are refused.
func TestIPLiterals(t *testing.T) {
	t.Parallel()
	var asked sync.Map
	tp := startProxy(t, Config{
		Ask: func(_ context.Context, host string, port int) Decision {
			asked.Store(host, true)
			return DecisionAllow
		},
	})
	tests := []struct {
		target string
		want   string
		asked  string
	}{
		{"2130706433:80", "private-destination", "127.0.0.1"},
		{"0x7f.1:80", "private-destination", "127.0.0.1"},
		{"0177.0.0.1:80", "private-destination", "127.0.0.1"},
		{"127.1:80", "private-destination", "127.0.0.1"},
		{"[::ffff:127.0.0.1]:80", "private-destination", "127.0.0.1"},
		{"[::]:80", "private-destination", "::"},
		{"0.0.0.0:8080", "private-destination", "0.0.0.0"},
		{"0:8080", "private-destination", "0.0.0.0"},
		{"[::1]:22", "private-destination", "::1"},
		{"[64:ff9b::7f00:1]:80", "private-destination", "64:ff9b::7f00:1"},
		{"10.0.0.1:80", "private-destination", "10.0.0.1"},
		{"169.254.169.254:80", "metadata-destination", "169.254.169.254"},
		{"[fd00:ec2::254]:80", "metadata-destination", "fd00:ec2::254"},
		{"100.100.100.200:80", "metadata-destination", "100.100.100.200"},
		{"metadata.google.internal:80", "metadata-destination", ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			t.Parallel()
			_, resp := tunnel(t, tp.addr, tt.target, testToken)
			if got := statusOf(resp); got != (status{403, tt.want, ""}) {
				t.Errorf("got %+v, want 403 %s", got, tt.want)
			}
			if tt.asked != "" {
				if _, ok := asked.Load(tt.asked); !ok {
					t.Errorf("Ask was not called with canonical %q", tt.asked)
				}
			}
		})
	}
}

func TestAskSingleflight(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	tp := startProxy(t, Config{
		Ask: func(_ context.Context, host string, port int) Decision {
			calls.Add(1)
			<-release
			return DecisionDeny
		},
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, resp := tunnel(t, tp.addr, "asked.test:443", testToken)
			if got := statusOf(resp); got != (status{403, "ask-denied", "ask"}) {
				t.Errorf("got %+v", got)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	_, resp := tunnel(t, tp.addr, "asked.test:443", testToken)
	if got := statusOf(resp); got.Deny != "ask-denied" {
		t.Errorf("remembered answer: %+v", got)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("Ask called %d times, want 1", n)
	}
}

func socksDial(t *testing.T, proxyAddr, token, target string) (net.Conn, error) {
	t.Helper()
	d, err := proxy.SOCKS5("tcp", proxyAddr, &proxy.Auth{User: "agent", Password: token}, &net.Dialer{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return d.Dial("tcp", target)
}

// socksRaw runs the handshake by hand and returns the reply code.
func socksRaw(t *testing.T, proxyAddr, token string, req []byte) byte {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := []byte{5, 1, 2, 1, 5}
	msg = append(msg, "agent"...)
	msg = append(msg, byte(len(token)))
	msg = append(msg, token...)
	c.Write(msg)
	c.Write(req)
	var b [4]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
	if b[0] != 5 || b[1] != 2 || b[2] != 1 || b[3] != 0 {
		t.Fatalf("auth replies % x", b)
	}
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatal(err)
	}
	return rep[1]
}

func socksDomainReq(host string, port int) []byte {
	b := []byte{5, 1, 0, 3, byte(len(host))}
	b = append(b, host...)
	return append(b, byte(port>>8), byte(port))
}

func TestSOCKS(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(up.Close)
	port := portOf(t, up.URL)
	tp := startProxy(t, Config{
		Allow:        []string{fmt.Sprintf("allowed.test:%d", port), "*.a.test"},
		AllowPrivate: true,
		Hosts:        map[string]string{"allowed.test": "127.0.0.1"},
	})
	t.Run("allowed", func(t *testing.T) {
		c, err := socksDial(t, tp.addr, testToken, fmt.Sprintf("allowed.test:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /socks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		if !bytes.Contains(b, []byte("hello GET /socks")) {
			t.Errorf("got %q", b)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		if _, err := socksDial(t, tp.addr, "nope", fmt.Sprintf("allowed.test:%d", port)); err == nil {
			t.Fatal("dial succeeded with a wrong token")
		}
	})
	t.Run("no auth method", func(t *testing.T) {
		c, _ := net.Dial("tcp", tp.addr)
		defer c.Close()
		c.Write([]byte{5, 1, 0})
		var b [2]byte
		io.ReadFull(c, b[:])
		if b != [2]byte{5, 0xff} {
			t.Errorf("reply % x", b)
		}
	})
	tests := []struct {
		name string
		req  []byte
		want byte
	}{
		{"denied host", socksDomainReq("other.test", 443), socksRepRuleset},
		{"nul", socksDomainReq("evil.test\x00.x.a.test", 443), socksRepRuleset},
		{"crlf", socksDomainReq("x.a.test\r\n", 443), socksRepRuleset},
		{"percent", socksDomainReq("evil.test%00.x.a.test", 443), socksRepRuleset},
		{"legacy loopback", socksDomainReq("0x7f.1", port), socksRepRuleset},
		{"ipv4 loopback", []byte{5, 1, 0, 1, 127, 0, 0, 1, byte(port >> 8), byte(port)}, socksRepRuleset},
		{"ipv6 mapped", append([]byte{5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 169, 254, 169, 254}, 0, 80), socksRepRuleset},
		{"bind", []byte{5, 2, 0, 1, 1, 2, 3, 4, 0, 80}, socksRepCmdUnsup},
		{"udp", []byte{5, 3, 0, 1, 1, 2, 3, 4, 0, 80}, socksRepCmdUnsup},
		{"bad atyp", []byte{5, 1, 0, 9, 1, 2, 3, 4, 0, 80}, socksRepATYP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := socksRaw(t, tp.addr, testToken, tt.req); got != tt.want {
				t.Errorf("reply %#x, want %#x", got, tt.want)
			}
		})
	}
}

// TestGoroutineLeaks runs traffic of every kind, closes the proxy and
// checks the goroutine count returns to where it was.
func TestGoroutineLeaks(t *testing.T) {
	skipShort(t)
	// Not parallel: it counts goroutines.
	up := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer up.Close()
	port := portOf(t, up.URL)
	before := runtimeGoroutines()
	cfg := Config{
		Token:        testToken,
		Allow:        []string{fmt.Sprintf("allowed.test:%d", port)},
		AllowPrivate: true,
		Hosts:        map[string]string{"allowed.test": "127.0.0.1"},
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	addr := l.Addr().String()
	for range 5 {
		c, resp := tunnelNoCleanup(addr, fmt.Sprintf("allowed.test:%d", port))
		if resp != nil && resp.StatusCode == 200 {
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			r, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, r.Body)
			}
		}
		// Leave it open: Close must tear it down.
		_ = c
	}
	idle, _ := net.Dial("tcp", addr) // never speaks
	_ = idle
	if c, err := socksDial(t, addr, testToken, fmt.Sprintf("allowed.test:%d", port)); err == nil {
		defer c.Close()
	}
	p.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve: %v", err)
	}
	up.CloseClientConnections()
	settle(t, before)
}

func settle(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtimeGoroutines()
		if n <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before, %d after Close\n%s", before, n, goroutineDump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tunnelNoCleanup(addr, target string) (net.Conn, *http.Response) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: %s\r\n\r\n", target, target, authHeader(testToken))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return c, nil
	}
	return &bufConn{Conn: c, r: br}, resp
}

func TestUnixSocketAndBody(t *testing.T) {
	t.Parallel()
	skipShort(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %d:%s", r.Method, len(b), b)
	}))
	t.Cleanup(up.Close)
	port := portOf(t, up.URL)
	p, err := New(Config{
		Token:        testToken,
		Allow:        []string{fmt.Sprintf("allowed.test:%d", port)},
		AllowPrivate: true,
		Hosts:        map[string]string{"allowed.test": "127.0.0.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	auth := "Proxy-Authorization: " + authHeader(testToken) + "\r\n"
	for i, body := range []string{"hello", "", strings.Repeat("x", 100000), "chunk"} {
		te := fmt.Sprintf("Content-Length: %d\r\n", len(body))
		wire := body
		if i == 3 {
			te = "Transfer-Encoding: chunked\r\n"
			wire = fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		}
		fmt.Fprintf(c, "POST http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n%s%s\r\n%s", port, port, te, auth, wire)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("POST %d:%s", len(body), body); string(got) != want {
			t.Errorf("request %d: got %.40q, want %.40q", i, got, want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	val := func() string { return "v" }
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no token", Config{}},
		{"bad pattern", Config{Token: "t", Allow: []string{"*"}}},
		{"private cidr", Config{Token: "t", Allow: []string{"10.0.0.0/8"}}},
		{"private ip", Config{Token: "t", Allow: []string{"127.0.0.1:8080"}}},
		{"wide cidr", Config{Token: "t", Allow: []string{"0.0.0.0/0"}}},
		{"bad hosts name", Config{Token: "t", Hosts: map[string]string{"a_b": "1.2.3.4"}}},
		{"bad hosts addr", Config{Token: "t", Hosts: map[string]string{"a.test": "nope"}}},
		{"credential no value", Config{Token: "t", Credentials: []Credential{{Host: "a.test"}}}},
		{"credential bad host", Config{Token: "t", Credentials: []Credential{{Host: "a b", Value: val}}}},
		{"short placeholder", Config{Token: "t", Credentials: []Credential{{Host: "a.test", Value: val, Placeholder: "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			if err == nil {
				p.Close()
				t.Fatal("New succeeded")
			}
			if !strings.HasPrefix(err.Error(), "egress: ") {
				t.Errorf("error %q lacks the egress prefix", err)
			}
		})
	}
	p, err := New(Config{Token: "t", Allow: []string{"10.0.0.0/8"}, AllowPrivate: true})
	if err != nil {
		t.Fatalf("private CIDR with AllowPrivate: %v", err)
	}
	p.Close()
}
