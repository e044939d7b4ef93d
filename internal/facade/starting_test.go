package facade

import (
	"testing"
	"time"
)

// TestStartingRouteWaits: a request to a starting sidecar is held until the
// route becomes a proxy (then answered by the sidecar) or StartWait passes
// (503 sidecar-down); the skill's SKILL.md is served at once.
func TestStartingRouteWaits(t *testing.T) {
	t.Parallel()
	up := echoServer(t)
	h := setup(t, Config{StartWait: 300 * time.Millisecond})
	if err := h.f.SetRoute(Route{Mount: "echo", Mode: ModeStarting, SkillMD: []byte("# echo")}); err != nil {
		t.Fatal(err)
	}
	c := unixClient(t, h.trusted)
	if r := do(t, c, "GET", "http://warden/echo/", nil, nil); r.code != 200 || r.body != "# echo" {
		t.Errorf("SKILL.md while starting: %d %q", r.code, r.body)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = h.f.SetRoute(Route{Mount: "echo", Upstream: up.URL})
	}()
	start := time.Now()
	if r := do(t, c, "GET", "http://warden/echo/x", nil, nil); r.code != 200 {
		t.Fatalf("held request: %d %s", r.code, r.body)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Error("the request was not held for the starting route")
	}
	if err := h.f.SetRoute(Route{Mount: "slow", Mode: ModeStarting}); err != nil {
		t.Fatal(err)
	}
	r := do(t, c, "GET", "http://warden/slow/x", nil, nil)
	if r.code != 503 || r.header.Get("X-Warden-Reason") != ReasonSidecarDown {
		t.Errorf("a sidecar that never starts: %d %q", r.code, r.header.Get("X-Warden-Reason"))
	}
	if err := h.f.SetRoute(Route{Mount: "gone", Mode: ModeStarting}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = h.f.SetRoute(Route{Mount: "gone", Mode: ModeBroken, Message: "failed to start"})
	}()
	if r := do(t, c, "GET", "http://warden/gone/x", nil, nil); r.code != 502 {
		t.Errorf("a sidecar that failed while a request waited: %d", r.code)
	}
}
