package facade

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"/", "/", true},
		{"//", "/", true},
		{"/a//b///c/", "/a/b/c/", true},
		{"/a/..", "", false},
		{"/a/%2e%2E/b", "", false},
		{"/a/./b", "", false},
		{"/a/.b/..c", "/a/.b/..c", true},
		{"/a/%zz", "", false},
		{"*", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := cleanPath(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("cleanPath(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "//a//b", "/a/../b", "/%2e%2e", "/a/%2F/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, ok := cleanPath(in)
		if !ok {
			return
		}
		if !strings.HasPrefix(out, "/") || strings.Contains(out, "//") {
			t.Fatalf("cleanPath(%q) = %q", in, out)
		}
		for seg := range strings.SplitSeq(out[1:], "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("cleanPath(%q) = %q keeps a dot segment", in, out)
			}
		}
		if again, _ := cleanPath(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
	})
}

func TestServeAfterClose(t *testing.T) {
	f, err := New(Config{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	l, err := ListenUnix(shortTempDir(t)+"/rt", "x.sock")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ServeToken(l); err == nil {
		t.Error("ServeToken after Close = nil")
	}
	if _, err := l.Accept(); err == nil {
		t.Error("listener left open")
	}
}

func TestShutdownWaitsForRequests(t *testing.T) {
	started := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, "done")
	}))
	defer up.Close()
	h := setup(t, Config{})
	if err := h.f.SetRoute(Route{Mount: "m", Upstream: up.URL}); err != nil {
		t.Fatal(err)
	}
	c := unixClient(t, h.trusted)
	res := make(chan result, 1)
	go func() { res <- do(t, c, "GET", "http://warden/m/x", nil, nil) }()
	<-started
	if err := h.f.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if r := <-res; r.code != 200 || r.body != "done" {
		t.Errorf("in-flight request: %d %q", r.code, r.body)
	}
}
