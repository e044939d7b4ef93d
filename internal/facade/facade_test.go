package facade

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testToken = "t0ken-0123456789abcdef"

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	f         *Facade
	dir       string
	trusted   string // host-side trusted socket
	tokenSock string // socket the in-sandbox relay targets
	tcpAddr   string
	log       *syncBuffer
}

// shortTempDir keeps socket paths under the 104/108-byte sun_path limit.
func shortTempDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "wf") //nolint:usetesting // t.TempDir paths can exceed sun_path (104 bytes) on macOS
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func setup(t testing.TB, cfg Config) *harness {
	t.Helper()
	h := &harness{dir: filepath.Join(shortTempDir(t), "rt"), log: &syncBuffer{}}
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(h.log, nil))
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.f = f
	l1, err := ListenUnix(h.dir, "facade.sock")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := ListenUnix(h.dir, "sandbox.sock")
	if err != nil {
		t.Fatal(err)
	}
	l3, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.trusted, h.tokenSock, h.tcpAddr = l1.Addr().String(), l2.Addr().String(), l3.Addr().String()
	var wg sync.WaitGroup
	for _, s := range []func() error{
		func() error { return f.ServeUnix(l1) },
		func() error { return f.ServeToken(l2) },
		func() error { return f.ServeToken(l3) },
	} {
		wg.Go(func() {
			if err := s(); !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		f.Close()
		wg.Wait()
	})
	// serve registers each listener's host names before accepting; wait for
	// all three so a request on one listener may name another.
	for _, want := range []string{h.tcpAddr, escapeSocket(h.trusted), escapeSocket(h.tokenSock)} {
		for i := 0; ; i++ {
			if _, ok := (*f.hosts.Load())[strings.ToLower(want)]; ok {
				break
			}
			if i == 1000 {
				t.Fatalf("listener %s never registered", want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return h
}

func unixClient(t testing.TB, path string) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 64,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func tcpClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

type result struct {
	code   int
	header http.Header
	body   string
}

func do(t testing.TB, c *http.Client, method, u string, hdr map[string]string, body io.Reader) result {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, u, err)
	}
	return result{resp.StatusCode, resp.Header, string(b)}
}

type echoed struct {
	Path, RawPath, Query, Prefix, Auth, XFF, XFH, Injected, Host, Body string
}

func echoServer(t testing.TB) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.NewEncoder(w).Encode(echoed{
			Path: r.URL.Path, RawPath: r.URL.RawPath, Query: r.URL.RawQuery,
			Prefix: r.Header.Get("X-Forwarded-Prefix"), Auth: r.Header.Get("Authorization"),
			XFF: r.Header.Get("X-Forwarded-For"), XFH: r.Header.Get("X-Forwarded-Host"),
			Injected: r.Header.Get("X-Skill-Key"), Host: r.Host, Body: string(b),
		})
	}))
	t.Cleanup(s.Close)
	return s
}

func TestRouting(t *testing.T) {
	up := echoServer(t)
	h := setup(t, Config{Version: "1.2.3"})
	if err := h.f.SetRoute(Route{
		Mount: "echo", Name: "echo-rest", Upstream: up.URL, SkillMD: []byte("# echo\n"),
		Header: http.Header{"X-Skill-Key": {"injected"}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.f.SetRoute(Route{Mount: "nomd", Upstream: up.URL}); err != nil {
		t.Fatal(err)
	}
	c := unixClient(t, h.trusted)
	spoof := map[string]string{
		"Authorization": "Bearer client-secret", "X-Forwarded-For": "6.6.6.6",
		"X-Forwarded-Host": "evil", "X-Forwarded-Prefix": "/evil", "X-Skill-Key": "client",
	}

	tests := []struct {
		name, method, path string
		want               echoed
	}{
		{"strip", "GET", "/echo/a/b?x=1", echoed{Path: "/a/b", Query: "x=1"}},
		{"collapse", "GET", "//echo//a///b", echoed{Path: "/a/b"}},
		{"escaped slash kept", "GET", "/echo/a%2Fb", echoed{Path: "/a/b", RawPath: "/a%2Fb"}},
		{"post bare mount", "POST", "/echo", echoed{Path: "/", Body: "hi"}},
		{"get root without SKILL.md", "GET", "/nomd/", echoed{Path: "/", Prefix: "/nomd", Injected: "client"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.method == "POST" {
				body = strings.NewReader("hi")
			}
			r := do(t, c, tt.method, "http://warden"+tt.path, spoof, body)
			if r.code != 200 {
				t.Fatalf("status %d %s", r.code, r.body)
			}
			var got echoed
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want.Prefix == "" {
				want.Prefix = "/echo"
				want.Injected = "injected"
			}
			want.Host = strings.TrimPrefix(up.URL, "http://")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("upstream saw (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("skill md", func(t *testing.T) {
		for _, p := range []string{"/echo", "/echo/"} {
			r := do(t, c, "GET", "http://warden"+p, nil, nil)
			if r.code != 200 || r.body != "# echo\n" || r.header.Get("X-Warden-Discovery") != "skill-md" ||
				r.header.Get("X-Omac-Discovery") != "skill-md" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") {
				t.Errorf("%s: %d %q %v", p, r.code, r.body, r.header)
			}
		}
	})
	t.Run("status", func(t *testing.T) {
		r := do(t, c, "GET", "http://warden/", nil, nil)
		var st Status
		if err := json.Unmarshal([]byte(r.body), &st); err != nil {
			t.Fatal(err)
		}
		want := Status{Version: "1.2.3", Skills: []SkillStatus{
			{Name: "echo-rest", Mount: "echo", State: "running", Base: "/echo/"},
			{Name: "nomd", Mount: "nomd", State: "running", Base: "/nomd/"},
		}}
		if diff := cmp.Diff(want, st); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})
	t.Run("bad paths", func(t *testing.T) {
		for _, p := range []string{"/echo/../nomd/x", "/echo/%2e%2e/x", "/echo/./x"} {
			req, _ := http.NewRequest("GET", "http://warden/", nil)
			req.URL.Opaque = p // keep the dots on the wire
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 || resp.Header.Get("X-Warden-Reason") != ReasonBadPath {
				t.Errorf("%s: %d", p, resp.StatusCode)
			}
		}
	})
	t.Run("remove", func(t *testing.T) {
		if !h.f.RemoveRoute("nomd") {
			t.Fatal("RemoveRoute = false")
		}
		r := do(t, c, "GET", "http://warden/nomd/x", nil, nil)
		if r.code != 404 || r.header.Get("X-Warden-Reason") != ReasonUnknownMount {
			t.Errorf("%d %v", r.code, r.header)
		}
	})
	if strings.Contains(h.log.String(), "client-secret") || strings.Contains(h.log.String(), testToken) {
		t.Error("access log contains a credential")
	}
	if !strings.Contains(h.log.String(), "mount=echo status=200 bytes_in=2") {
		t.Errorf("access log lacks fields:\n%s", h.log.String())
	}
}

func TestAuth(t *testing.T) {
	up := echoServer(t)
	h := setup(t, Config{})
	if err := h.f.SetRoute(Route{Mount: "echo", Upstream: up.URL}); err != nil {
		t.Fatal(err)
	}
	trusted := unixClient(t, h.trusted)
	sock := unixClient(t, h.tokenSock)
	tcp := tcpClient(t)
	tcpURL := "http://" + h.tcpAddr + "/echo/x"
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	tests := []struct {
		name string
		c    *http.Client
		url  string
		hdr  map[string]string
		want int
	}{
		{"trusted no token", trusted, "http://warden/echo/x", nil, 200},
		{"token socket no token", sock, "http://warden/echo/x", nil, 401},
		{"token socket wrong token", sock, "http://warden/echo/x", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"token socket basic", sock, "http://warden/echo/x", map[string]string{"Authorization": "Basic " + testToken}, 401},
		{"token socket token", sock, "http://warden/echo/x", bearer, 200},
		{"token socket lower-case scheme", sock, "http://warden/echo/x", map[string]string{"Authorization": "bearer " + testToken}, 200},
		{"tcp no token", tcp, tcpURL, nil, 401},
		{"tcp token", tcp, tcpURL, bearer, 200},
		{"tcp status needs token", tcp, "http://" + h.tcpAddr + "/", nil, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.c, "GET", tt.url, tt.hdr, nil)
			if r.code != tt.want {
				t.Fatalf("status %d, want %d: %s", r.code, tt.want, r.body)
			}
			if r.code == 401 && r.header.Get("X-Warden-Reason") != ReasonUnauthorized {
				t.Errorf("reason %q", r.header.Get("X-Warden-Reason"))
			}
			if r.code == 200 && strings.Contains(r.body, testToken) {
				t.Error("token forwarded upstream")
			}
		})
	}
	if strings.Contains(h.log.String(), testToken) {
		t.Errorf("token in access log:\n%s", h.log.String())
	}
	t.Run("plain handler is untrusted", func(t *testing.T) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "http://warden/", nil)
		h.f.ServeHTTP(rec, req)
		if rec.Code != 401 {
			t.Errorf("status %d", rec.Code)
		}
	})
	t.Run("ServeToken without token", func(t *testing.T) {
		f, _ := New(Config{})
		defer f.Close()
		if err := f.ServeToken(nil); !errors.Is(err, ErrNoToken) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestHostAndOrigin(t *testing.T) {
	up := echoServer(t)
	h := setup(t, Config{Port: 4242, Hosts: []string{"skills.internal"}})
	if err := h.f.SetRoute(Route{Mount: "echo", Upstream: up.URL}); err != nil {
		t.Fatal(err)
	}
	c := unixClient(t, h.trusted)
	tests := []struct {
		name   string
		hdr    map[string]string
		want   int
		reason string
	}{
		{"warden", map[string]string{"Host": "warden"}, 200, ""},
		{"unix", map[string]string{"Host": "unix"}, 200, ""},
		{"advertised port", map[string]string{"Host": "127.0.0.1:4242"}, 200, ""},
		{"localhost advertised port", map[string]string{"Host": "LOCALHOST:4242"}, 200, ""},
		{"listener port", map[string]string{"Host": h.tcpAddr}, 200, ""},
		{"socket path", map[string]string{"Host": escapeSocket(h.trusted)}, 200, ""},
		{"configured", map[string]string{"Host": "skills.internal"}, 200, ""},
		{"rebinding", map[string]string{"Host": "attacker.example:4242"}, 403, ReasonBadHost},
		{"other port", map[string]string{"Host": "127.0.0.1:4243"}, 403, ReasonBadHost},
		{"bare localhost", map[string]string{"Host": "localhost"}, 403, ReasonBadHost},
		{"origin", map[string]string{"Origin": "http://warden"}, 403, ReasonForbiddenOrigin},
		{"null origin", map[string]string{"Origin": "null"}, 403, ReasonForbiddenOrigin},
		{"referer", map[string]string{"Referer": "http://warden/"}, 403, ReasonForbiddenOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, c, "GET", "http://warden/echo/x", tt.hdr, nil)
			if r.code != tt.want || r.header.Get("X-Warden-Reason") != tt.reason || r.header.Get("X-Omac-Reason") != tt.reason {
				t.Errorf("got %d %q, want %d %q", r.code, r.header.Get("X-Warden-Reason"), tt.want, tt.reason)
			}
		})
	}
	t.Run("empty host", func(t *testing.T) {
		conn, err := net.Dial("unix", h.trusted)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, "GET /echo/x HTTP/1.0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}

func TestStubs(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	// A port nobody listens on: bind, note, close.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()

	h := setup(t, Config{})
	for _, r := range []Route{
		{Mount: "pend", Mode: ModePending, Missing: []string{"API_KEY", "ORG_ID"}},
		{Mount: "broke", Mode: ModeBroken, Message: "bundle changed; run warden skill approve broke"},
		{Mount: "down", Mode: ModeDown},
		{Mount: "dead", Upstream: dead},
		{Mount: "slow", Upstream: slow.URL, Timeout: 50 * time.Millisecond},
	} {
		if err := h.f.SetRoute(r); err != nil {
			t.Fatal(err)
		}
	}
	c := unixClient(t, h.trusted)
	tests := []struct {
		path   string
		code   int
		reason string
		detail string
	}{
		{"/pend/x", 409, ReasonPendingCredentials, `"missing":["API_KEY","ORG_ID"]`},
		{"/broke/x", 502, ReasonSkillBroken, "run warden skill approve broke"},
		{"/down/x", 503, ReasonSidecarDown, ""},
		{"/dead/x", 503, ReasonSidecarDown, ""},
		{"/slow/x", 504, ReasonTimeout, ""},
		{"/nope/x", 404, ReasonUnknownMount, ""},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			r := do(t, c, "GET", "http://warden"+tt.path, nil, nil)
			if r.code != tt.code || r.header.Get("X-Warden-Reason") != tt.reason || r.header.Get("X-Omac-Reason") != tt.reason {
				t.Fatalf("got %d %q, want %d %q", r.code, r.header.Get("X-Warden-Reason"), tt.code, tt.reason)
			}
			if !strings.Contains(r.body, tt.detail) || !json.Valid([]byte(r.body)) {
				t.Errorf("body %s lacks %s", r.body, tt.detail)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	up := echoServer(t)
	h := setup(t, Config{MaxBody: 1 << 20})
	if err := h.f.SetRoute(Route{Mount: "small", Upstream: up.URL, MaxBody: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := h.f.SetRoute(Route{Mount: "dflt", Upstream: up.URL}); err != nil {
		t.Fatal(err)
	}
	c := unixClient(t, h.trusted)
	type onlyReader struct{ io.Reader } // hides Len so the body is chunked
	tests := []struct {
		name string
		path string
		body io.Reader
		want int
	}{
		{"under limit", "/small/x", bytes.NewReader(make([]byte, 1000)), 200},
		{"content-length over", "/small/x", bytes.NewReader(make([]byte, 1001)), 413},
		{"chunked over", "/small/x", onlyReader{bytes.NewReader(make([]byte, 5000))}, 413},
		{"default limit", "/dflt/x", onlyReader{bytes.NewReader(make([]byte, 1<<20+1))}, 413},
		{"default under", "/dflt/x", bytes.NewReader(make([]byte, 1<<20)), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, c, "POST", "http://warden"+tt.path, nil, tt.body)
			if r.code != tt.want {
				t.Fatalf("status %d want %d: %.200s", r.code, tt.want, r.body)
			}
			if r.code == 413 && r.header.Get("X-Warden-Reason") != ReasonBodyTooLarge {
				t.Errorf("reason %q", r.header.Get("X-Warden-Reason"))
			}
		})
	}
}

// TestSSEIncremental checks that streams are forwarded as they arrive: SSE,
// and any other response of unknown length (here chunked NDJSON).
func TestSSEIncremental(t *testing.T) {
	step := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ndjson" {
			w.Header().Set("Content-Type", "application/x-ndjson")
		} else {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		w.WriteHeader(200)
		fmt.Fprint(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-step:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: 2\n\n")
	}))
	t.Cleanup(up.Close)
	h := setup(t, Config{})
	if err := h.f.SetRoute(Route{Mount: "sse", Upstream: up.URL}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    *http.Client
		url  string
		hdr  map[string]string
	}{
		{"unix", unixClient(t, h.trusted), "http://warden/sse/tick", nil},
		{"tcp", tcpClient(t), "http://" + h.tcpAddr + "/sse/tick", map[string]string{"Authorization": "Bearer " + testToken}},
		{"unix-chunked", unixClient(t, h.trusted), "http://warden/sse/ndjson", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", tc.url, nil)
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, err := tc.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			got := make(chan string, 1)
			go func() {
				line, _ := br.ReadString('\n')
				got <- line
			}()
			select {
			case line := <-got:
				if line != "data: 1\n" {
					t.Fatalf("first line %q", line)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("event 1 not delivered before event 2 was written: not incremental")
			}
			br.ReadString('\n')
			step <- struct{}{}
			line, err := br.ReadString('\n')
			if line != "data: 2\n" {
				t.Fatalf("second line %q %v", line, err)
			}
		})
	}
}

// Minimal RFC 6455 framing, enough for a round trip.

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func wsAccept(key string) string {
	s := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(s[:])
}

func wsWrite(w io.Writer, op byte, p []byte, mask bool) error {
	hdr := []byte{0x80 | op}
	var mb byte
	if mask {
		mb = 0x80
	}
	switch {
	case len(p) < 126:
		hdr = append(hdr, mb|byte(len(p)))
	case len(p) <= 0xffff:
		hdr = append(hdr, mb|126, byte(len(p)>>8), byte(len(p)))
	default:
		hdr = append(hdr, mb|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(len(p)))
	}
	if mask {
		var key [4]byte
		rand.Read(key[:])
		hdr = append(hdr, key[:]...)
		m := make([]byte, len(p))
		for i := range p {
			m[i] = p[i] ^ key[i%4]
		}
		p = m
	}
	_, err := w.Write(append(hdr, p...))
	return err
}

func wsRead(r *bufio.Reader) (op byte, masked bool, p []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	op, masked = h[0]&0x0f, h[1]&0x80 != 0
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err = io.ReadFull(r, e[:]); err != nil {
			return
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err = io.ReadFull(r, e[:]); err != nil {
			return
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	var key [4]byte
	if masked {
		if _, err = io.ReadFull(r, key[:]); err != nil {
			return
		}
	}
	p = make([]byte, n)
	if _, err = io.ReadFull(r, p); err != nil {
		return
	}
	if masked {
		for i := range p {
			p[i] ^= key[i%4]
		}
	}
	return
}

// wsEcho is an upstream echoing frames until a close frame.
func wsEcho(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || r.Header.Get("Sec-WebSocket-Version") != "13" {
		http.Error(w, "not websocket", 400)
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nX-Path: %s\r\n\r\n",
		wsAccept(r.Header.Get("Sec-WebSocket-Key")), r.URL.Path)
	brw.Flush()
	for {
		op, masked, p, err := wsRead(brw.Reader)
		if err != nil || !masked {
			return
		}
		if op == 8 {
			wsWrite(c, 8, p, false)
			return
		}
		wsWrite(c, op, p, false)
	}
}

// wsDial performs the client handshake on conn.
func wsDial(t testing.TB, conn net.Conn, path string, extra string) *bufio.Reader {
	t.Helper()
	var k [16]byte
	rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: warden\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n", path, key, extra)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // a 101 has no body; the stream continues on br
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept(key) {
		t.Fatalf("handshake: %d %v", resp.StatusCode, resp.Header)
	}
	if resp.Header.Get("X-Path") != "/chat" {
		t.Errorf("upstream path %q", resp.Header.Get("X-Path"))
	}
	return br
}

func TestWebSocket(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(wsEcho))
	t.Cleanup(up.Close)
	h := setup(t, Config{})
	if err := h.f.SetRoute(Route{Mount: "ws", Upstream: up.URL}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, sock, extra string }{
		{"trusted", h.trusted, ""},
		{"token", h.tokenSock, "Authorization: Bearer " + testToken + "\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("unix", tc.sock)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			br := wsDial(t, conn, "/ws/chat", tc.extra)
			for _, msg := range []string{"hello", strings.Repeat("x", 300), ""} {
				if err := wsWrite(conn, 1, []byte(msg), true); err != nil {
					t.Fatal(err)
				}
				op, masked, p, err := wsRead(br)
				if err != nil || op != 1 || masked || string(p) != msg {
					t.Fatalf("echo: op=%d masked=%v len=%d err=%v", op, masked, len(p), err)
				}
			}
			wsWrite(conn, 8, []byte{0x03, 0xe8}, true)
			if op, _, _, err := wsRead(br); err != nil || op != 8 {
				t.Fatalf("close: op=%d err=%v", op, err)
			}
		})
	}
	t.Run("token required", func(t *testing.T) {
		conn, err := net.Dial("unix", h.tokenSock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, "GET /ws/chat HTTP/1.1\r\nHost: warden\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: x\r\nSec-WebSocket-Version: 13\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
	if !strings.Contains(h.log.String(), "status=101") {
		t.Errorf("no 101 in access log:\n%s", h.log.String())
	}
}

func TestRouteSwapUnderLoad(t *testing.T) {
	mk := func(body string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
		t.Cleanup(s.Close)
		return s
	}
	a, b := mk("A"), mk("B")
	h := setup(t, Config{})
	routes := []Route{
		{Mount: "s", Upstream: a.URL},
		{Mount: "s", Upstream: b.URL},
		{Mount: "s", Mode: ModeDown},
		{Mount: "s", Upstream: a.URL, MaxBody: 5},
	}
	if err := h.f.SetRoute(routes[0]); err != nil {
		t.Fatal(err)
	}
	c := unixClient(t, h.trusted)
	ctx, cancel := context.WithCancel(t.Context())
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if err := h.f.SetRoute(routes[i%len(routes)]); err != nil {
				t.Error(err)
				return
			}
			if i%7 == 0 {
				h.f.Routes()
			}
			runtime.Gosched()
		}
	})
	var clients sync.WaitGroup
	seen := make([]map[string]int, 8)
	for g := range seen {
		seen[g] = map[string]int{}
		clients.Go(func() {
			for range 150 {
				r := do(t, c, "GET", "http://warden/s/x", nil, nil)
				seen[g][strconv.Itoa(r.code)+r.body[:min(len(r.body), 1)]]++
			}
		})
	}
	clients.Wait()
	cancel()
	swapper.Wait()
	total := map[string]int{}
	for _, m := range seen {
		for k, v := range m {
			total[k] += v
		}
	}
	for k := range total {
		switch k {
		case "200A", "200B", "503{":
		default:
			t.Errorf("unexpected response %q", k)
		}
	}
	t.Logf("responses: %v", total)
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func TestNoLeaksAfterClose(t *testing.T) {
	runtime.GC()
	g0, fd0 := runtime.NumGoroutine(), countFDs(t)

	func() {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/chat" {
				wsEcho(w, r)
				return
			}
			if r.URL.Path == "/tick" {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: 1\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			io.WriteString(w, "ok")
		}))
		defer up.Close()
		dir := filepath.Join(shortTempDir(t), "rt")
		f, err := New(Config{Token: testToken})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.SetRoute(Route{Mount: "m", Upstream: up.URL}); err != nil {
			t.Fatal(err)
		}
		l1, err := ListenUnix(dir, "a.sock")
		if err != nil {
			t.Fatal(err)
		}
		l2, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { f.ServeUnix(l1) })
		wg.Go(func() { f.ServeToken(l2) })

		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", l1.Addr().String())
		}}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		for range 20 {
			if r := do(t, c, "GET", "http://warden/m/x", nil, nil); r.code != 200 {
				t.Fatalf("status %d", r.code)
			}
		}
		// Leave a WebSocket and an SSE stream open across Close.
		ws, err := net.Dial("unix", l1.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		wsDial(t, ws, "/m/chat", "")
		resp, err := c.Get("http://warden/m/tick")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		bufio.NewReader(resp.Body).ReadString('\n')

		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		wg.Wait()
		// Both streams must have been cut by Close.
		ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := ws.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("websocket still open after Close: %v", err)
		}
	}()

	deadline := time.Now().Add(5 * time.Second)
	for {
		g, fd := runtime.NumGoroutine(), countFDs(t)
		if g <= g0 && fd <= fd0 {
			t.Logf("goroutines %d->%d, fds %d->%d", g0, g, fd0, fd)
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("leak: goroutines %d->%d, fds %d->%d\n%s", g0, g, fd0, fd, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestListenUnixModes(t *testing.T) {
	base := shortTempDir(t)
	dir := filepath.Join(base, "rt")
	l, err := ListenUnix(dir, "f.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "f.sock"): 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %#o, want %#o", p, fi.Mode().Perm(), want)
		}
	}
	// A stale socket is replaced.
	l2, err := ListenUnix(dir, "f.sock")
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	l2.Close()

	wide := filepath.Join(base, "wide")
	os.Mkdir(wide, 0o755)
	os.Chmod(wide, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(dir, link)
	file := filepath.Join(base, "file")
	os.WriteFile(filepath.Join(dir, "plain"), nil, 0o600)
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct{ name, dir, sock string }{
		{"wide dir", wide, "f.sock"},
		{"symlink dir", link, "f.sock"},
		{"file as dir", file, "f.sock"},
		{"name with slash", dir, "a/b"},
		{"existing non-socket", dir, "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, err := ListenUnix(tc.dir, tc.sock); err == nil {
				l.Close()
				t.Error("no error")
			}
		})
	}
}

func TestEnv(t *testing.T) {
	got := Env("/run/warden s/sandbox.sock", 4242, "tok", []string{"echo", "my-skill.v2"})
	want := []string{
		"WARDEN_SOCKET=/run/warden s/sandbox.sock",
		"WARDEN_BASE=http://127.0.0.1:4242/",
		"WARDEN_TOKEN=tok",
		"OMAC_SOCKET=/run/warden s/sandbox.sock",
		"OMAC_HOST=127.0.0.1",
		"OMAC_PORT=4242",
		"OMAC_BASE=http://127.0.0.1:4242/",
		"OMAC_SKILLS=echo,my-skill.v2",
		"WARDEN_ECHO_BASE=http://127.0.0.1:4242/echo/",
		"OMAC_ECHO_BASE=http://127.0.0.1:4242/echo",
		"OMAC_ECHO_SOCKET_BASE=http+unix://%2Frun%2Fwarden%20s%2Fsandbox.sock/echo",
		"WARDEN_MY_SKILL_V2_BASE=http://127.0.0.1:4242/my-skill.v2/",
		"OMAC_MY_SKILL_V2_BASE=http://127.0.0.1:4242/my-skill.v2",
		"OMAC_MY_SKILL_V2_SOCKET_BASE=http+unix://%2Frun%2Fwarden%20s%2Fsandbox.sock/my-skill.v2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
}

func TestSetRouteValidation(t *testing.T) {
	f, _ := New(Config{})
	defer f.Close()
	for _, r := range []Route{
		{Mount: ""},
		{Mount: ".."},
		{Mount: "a/b"},
		{Mount: "a b"},
		{Mount: strings.Repeat("a", 65)},
		{Mount: "x", Upstream: "ftp://127.0.0.1:1"},
		{Mount: "x", Upstream: "http://u:p@127.0.0.1:1"},
		{Mount: "x"},
	} {
		if err := f.SetRoute(r); err == nil {
			t.Errorf("SetRoute(%+v) = nil", r)
		}
	}
}
