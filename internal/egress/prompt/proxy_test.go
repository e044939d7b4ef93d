package prompt_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/egress/prompt"
)

const token = "s3ssion-t0ken"

type answerer struct {
	a     prompt.Answer
	calls atomic.Int32
}

func (f *answerer) Ask(context.Context, string, int) (prompt.Answer, error) {
	f.calls.Add(1)
	return f.a, nil
}

// startProxy serves a real egress.Proxy with cfg on loopback and returns
// an HTTP client that goes through it.
func startProxy(t *testing.T, cfg egress.Config) *http.Client {
	t.Helper()
	cfg.Token = token
	p, err := egress.New(cfg)
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
		if err := <-done; !errors.Is(err, egress.ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	pu := &url.URL{Scheme: "http", User: url.UserPassword("agent", token), Host: l.Addr().String()}
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get returns the status and X-Warden-Deny of a GET through c.
func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Warden-Deny")
}

// TestProxyLearnsAlways: an "always" answer lets the request through, is
// persisted, and a second proxy (a new session) allows the host without
// asking.
func TestProxyLearnsAlways(t *testing.T) {
	if testing.Short() {
		t.Skip("opens loopback listeners; skipped with -short")
	}
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") }))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	port, _ := strconv.Atoi(u.Port())
	path := filepath.Join(t.TempDir(), "learned-network.yaml")
	target := fmt.Sprintf("http://unknown.test:%d/x", port)
	hosts := map[string]string{"unknown.test": "127.0.0.1"}

	l1, err := prompt.OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	a1 := &answerer{a: prompt.AnswerAlways}
	c1 := startProxy(t, egress.Config{AllowPrivate: true, Hosts: hosts, Ask: prompt.New(prompt.Config{Learned: l1, Asker: a1, Scope: "/src/app"}).Ask})
	for range 2 {
		if code, deny := get(t, c1, target); code != http.StatusOK {
			t.Fatalf("first session: %d %s", code, deny)
		}
	}
	if n := a1.calls.Load(); n != 1 {
		t.Errorf("first session asked %d times, want 1", n)
	}
	l, err := prompt.OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok, err := l.Lookup("unknown.test", port, "/src/app"); err != nil || !ok || e.Decision != prompt.Allow {
		t.Fatalf("not persisted: %+v %v %v", e, ok, err)
	}

	a2 := &answerer{a: prompt.AnswerDeny}
	c2 := startProxy(t, egress.Config{AllowPrivate: true, Hosts: hosts, Ask: prompt.New(prompt.Config{Learned: l, Asker: a2, Scope: "/src/app"}).Ask})
	if code, deny := get(t, c2, target); code != http.StatusOK {
		t.Fatalf("second session: %d %s", code, deny)
	}
	if n := a2.calls.Load(); n != 0 {
		t.Errorf("second session asked %d times, want 0", n)
	}
}

// TestProxyLearnedAllowCannotOverride: learned allows only answer the
// unknown-host question. A deny entry, the metadata checks and the
// private-address checks still refuse, and nobody is asked.
func TestProxyLearnedAllowCannotOverride(t *testing.T) {
	if testing.Short() {
		t.Skip("opens loopback listeners; skipped with -short")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "learned-network.yaml")
	l, err := prompt.OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"denied.test", "169.254.169.254", "metadata.google.internal", "private.test", "10.1.2.3", "rebind.test"} {
		if err := l.Remember(prompt.Entry{Host: h, Decision: prompt.Allow, Scope: prompt.ScopeGlobal}); err != nil {
			t.Fatal(err)
		}
	}
	hosts := map[string]string{"denied.test": "93.184.215.14", "private.test": "127.0.0.1", "rebind.test": "169.254.169.254"}
	tests := []struct {
		name         string
		allowPrivate bool
		url          string
		wantDeny     string
	}{
		{"policy deny", true, "http://denied.test/", egress.ReasonHostDenied},
		{"metadata address", true, "http://169.254.169.254/latest/meta-data/", egress.ReasonMetadata},
		{"metadata name", true, "http://metadata.google.internal/", egress.ReasonMetadata},
		{"name resolving to metadata", true, "http://rebind.test/", egress.ReasonMetadata},
		{"private name", false, "http://private.test/", egress.ReasonPrivateDestination},
		{"private address", false, "http://10.1.2.3/", egress.ReasonPrivateDestination},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &answerer{a: prompt.AnswerAlways}
			c := startProxy(t, egress.Config{
				Deny: []string{"denied.test"}, AllowPrivate: tc.allowPrivate, Hosts: hosts,
				Dial: func(context.Context, string, string) (net.Conn, error) {
					t.Error("the proxy dialled")
					return nil, errors.New("no dialling in this test")
				},
				Ask: prompt.New(prompt.Config{Learned: l, Asker: a}).Ask,
			})
			code, deny := get(t, c, tc.url)
			if code != http.StatusForbidden || deny != tc.wantDeny {
				t.Errorf("got %d %q, want 403 %q", code, deny, tc.wantDeny)
			}
			if n := a.calls.Load(); n != 0 {
				t.Errorf("asked %d times", n)
			}
		})
	}
}
