package facade

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"testing"
)

// TestUnixUpstream: a route whose upstream is "unix:<path>" reaches a
// sidecar served on that socket (a relay into a sidecar's own network
// namespace); a relative socket path is refused.
func TestUnixUpstream(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "sidecar.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(echoed{Path: r.URL.Path, Prefix: r.Header.Get("X-Forwarded-Prefix"), Host: r.Host})
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	h := setup(t, Config{})
	if err := h.f.SetRoute(Route{Mount: "box", Upstream: "unix:" + sock}); err != nil {
		t.Fatal(err)
	}
	r := do(t, unixClient(t, h.trusted), "GET", "http://warden/box/v1/x", nil, nil)
	if r.code != 200 {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	var got echoed
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Path != "/v1/x" || got.Prefix != "/box" {
		t.Errorf("forwarded %+v", got)
	}
	if err := h.f.SetRoute(Route{Mount: "bad", Upstream: "unix:relative.sock"}); err == nil {
		t.Error("a relative socket path was accepted")
	}
}
