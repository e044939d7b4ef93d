package prompt

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func TestLearnedRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "warden", "learned-network.yaml")
	l, err := OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	if es, err := l.Entries(); err != nil || len(es) != 0 {
		t.Fatalf("fresh store: %v, %v", es, err)
	}
	for _, e := range []Entry{
		{Host: "B.Example.COM", Port: 443, Decision: Allow, Scope: "/src/app", Time: t0},
		{Host: "a.example.com", Decision: Deny, Time: t0},
		{Host: "::1", Port: 8080, Decision: Allow, Scope: ScopeGlobal, Time: t0},
	} {
		if err := l.Remember(e); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v, %v", di.Mode(), err)
	}
	want := []Entry{
		{Host: "::1", Port: 8080, Decision: Allow, Scope: ScopeGlobal, Time: t0},
		{Host: "a.example.com", Decision: Deny, Scope: ScopeGlobal, Time: t0},
		{Host: "b.example.com", Port: 443, Decision: Allow, Scope: "/src/app", Time: t0},
	}
	l2, err := OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l2.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reloaded (-want +got):\n%s", diff)
	}
	// Replacing an entry keeps one per host, port and scope.
	if err := l2.Remember(Entry{Host: "b.example.com", Port: 443, Decision: Deny, Scope: "/src/app", Time: t0}); err != nil {
		t.Fatal(err)
	}
	// l sees l2's write without reopening.
	if e, ok, err := l.Lookup("b.example.com", 443, "/src/app"); err != nil || !ok || e.Decision != Deny {
		t.Errorf("after replace: %+v %v %v", e, ok, err)
	}
	if es, _ := l.Entries(); len(es) != 3 {
		t.Errorf("entries after replace: %+v", es)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestLearnedLookup(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "learned-network.yaml")
	writeFile(t, path, `version: 1
decisions:
  - {host: any-port.test, decision: allow, scope: global, time: 2025-06-01T12:00:00Z}
  - {host: one-port.test, port: 8443, decision: allow, scope: /src/app, time: 2025-06-01T12:00:00Z}
  - {host: mixed.test, port: 443, decision: allow, scope: /src/app, time: 2025-06-01T12:00:00Z}
  - {host: mixed.test, decision: deny, scope: global, time: 2025-06-01T12:00:00Z}
  - {host: other-project.test, port: 443, decision: allow, scope: /src/other, time: 2025-06-01T12:00:00Z}
  - {host: no-scope.test, port: 443, decision: deny, time: 2025-06-01T12:00:00Z}
`)
	l, err := OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		host   string
		port   int
		want   string // "" for none
		target string
	}{
		{"any port entry", "any-port.test", 22, Allow, "any-port.test"},
		{"port entry", "one-port.test", 8443, Allow, "one-port.test:8443"},
		{"other port", "one-port.test", 443, "", ""},
		{"deny wins", "mixed.test", 443, Deny, "mixed.test"},
		{"other project", "other-project.test", 443, "", ""},
		{"empty scope is global", "no-scope.test", 443, Deny, "no-scope.test:443"},
		{"unknown", "nope.test", 443, "", ""},
		{"subdomain is another host", "a.any-port.test", 443, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, ok, err := l.Lookup(tc.host, tc.port, "/src/app")
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != "") || e.Decision != tc.want || e.Target() != tc.target {
				t.Errorf("Lookup = %+v, %v; want %q from %q", e, ok, tc.want, tc.target)
			}
		})
	}
}

func TestLearnedInvalidFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"unknown key", "version: 1\ndecisions:\n  - {host: a.test, decision: allow, why: x}\n", "field why not found"},
		{"bad decision", "version: 1\ndecisions:\n  - {host: a.test, decision: maybe}\n", `invalid decision "maybe"`},
		{"bad host", "version: 1\ndecisions:\n  - {host: \"a b.test\", decision: allow}\n", "invalid host"},
		{"bad port", "version: 1\ndecisions:\n  - {host: a.test, port: 70000, decision: allow}\n", "out of range"},
		{"relative scope", "version: 1\ndecisions:\n  - {host: a.test, decision: allow, scope: src}\n", `invalid scope "src"`},
		{"no version", "decisions: []\n", "unsupported version 0"},
		{"syntax", "version: [\n", "yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "learned-network.yaml")
			writeFile(t, path, tc.in)
			_, err := OpenLearned(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("OpenLearned error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	t.Run("write refuses to replace a broken file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "learned-network.yaml")
		l, err := OpenLearned(path)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, "version: 1\ndecisions: nope\n")
		if err := l.Remember(Entry{Host: "a.test", Port: 443, Decision: Allow, Time: t0}); err == nil {
			t.Fatal("Remember over a broken file succeeded")
		}
		if b, _ := os.ReadFile(path); string(b) != "version: 1\ndecisions: nope\n" {
			t.Errorf("broken file was rewritten: %q", b)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "learned-network.yaml")
		writeFile(t, path, "")
		if _, err := OpenLearned(path); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLearnedForget(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "learned-network.yaml")
	l, err := OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{
		{Host: "a.test", Port: 443, Decision: Allow, Scope: "/p1"},
		{Host: "a.test", Port: 443, Decision: Deny, Scope: "/p2"},
		{Host: "a.test", Port: 80, Decision: Allow},
		{Host: "a.test", Decision: Allow},
		{Host: "b.test", Port: 443, Decision: Allow},
	} {
		if err := l.Remember(e); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := l.Forget("a.test", 443)
	if err != nil || len(removed) != 2 {
		t.Fatalf("Forget a.test:443 = %+v, %v; want both scopes", removed, err)
	}
	removed, err = l.Forget("a.test", 0)
	if err != nil || len(removed) != 2 {
		t.Fatalf("Forget a.test = %+v, %v; want the rest of a.test", removed, err)
	}
	removed, err = l.Forget("c.test", 0)
	if err != nil || len(removed) != 0 {
		t.Fatalf("Forget c.test = %+v, %v", removed, err)
	}
	es, _ := l.Entries()
	if len(es) != 1 || es[0].Host != "b.test" {
		t.Errorf("left: %+v", es)
	}
}

// TestLearnedConcurrentWriters has several stores on one file (as several
// sessions would) remember from many goroutines; the flock and re-read
// keep every decision.
func TestLearnedConcurrentWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "learned-network.yaml")
	const stores, perStore = 4, 10
	var wg sync.WaitGroup
	for s := range stores {
		l, err := OpenLearned(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range perStore {
			wg.Go(func() {
				if err := l.Remember(Entry{Host: fmt.Sprintf("h%d-%d.test", s, i), Port: 443, Decision: Allow, Time: t0}); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	l, err := OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	if es, _ := l.Entries(); len(es) != stores*perStore {
		t.Errorf("%d entries, want %d", len(es), stores*perStore)
	}
}

// TestLearnedTwoProcesses runs writers in two child processes at once.
func TestLearnedTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes; skipped with -short")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "learned-network.yaml")
	const perChild = 25
	var cmds []*exec.Cmd
	for c := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLearnedHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "WARDEN_LEARNED_HELPER="+path, "WARDEN_LEARNED_CHILD="+strconv.Itoa(c), "WARDEN_LEARNED_N="+strconv.Itoa(perChild))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	l, err := OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	if es, _ := l.Entries(); len(es) != 2*perChild {
		t.Errorf("%d entries, want %d", len(es), 2*perChild)
	}
}

// TestLearnedHelperProcess is TestLearnedTwoProcesses's child.
func TestLearnedHelperProcess(t *testing.T) {
	path := os.Getenv("WARDEN_LEARNED_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv("WARDEN_LEARNED_N"))
	l, err := OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := l.Remember(Entry{Host: fmt.Sprintf("c%s-%d.test", os.Getenv("WARDEN_LEARNED_CHILD"), i), Port: 443, Decision: Deny, Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLearnedSite: a site entry covers the registrable domain and every
// name under it, not a look-alike; deny still wins; forget by "*.site".
func TestLearnedSite(t *testing.T) {
	t.Parallel()
	l, err := OpenLearned(filepath.Join(t.TempDir(), "learned.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Remember(Entry{Host: "example.com", Subdomains: true, Port: 443, Decision: Allow, Scope: ScopeGlobal}); err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"example.com": true, "api.example.com": true, "a.b.example.com": true, "badexample.com": false, "example.com.evil.test": false} {
		_, ok, err := l.Lookup(host, 443, "/p")
		if err != nil || ok != want {
			t.Errorf("%s: covered=%v, want %v (%v)", host, ok, want, err)
		}
	}
	if _, ok, _ := l.Lookup("api.example.com", 80, "/p"); ok {
		t.Error("the site entry applied on another port")
	}
	if err := l.Remember(Entry{Host: "evil.example.com", Port: 443, Decision: Deny, Scope: ScopeGlobal}); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := l.Lookup("evil.example.com", 443, "/p"); !ok || e.Decision != Deny {
		t.Errorf("deny under an allowed site: %+v %v", e, ok)
	}
	for _, bad := range []string{"api.example.com", "co.uk", "192.0.2.1"} {
		if err := l.Remember(Entry{Host: bad, Subdomains: true, Decision: Allow}); err == nil {
			t.Errorf("a site entry for %s was accepted", bad)
		}
	}
	removed, err := l.Forget("*.example.com", 0)
	if err != nil || len(removed) != 1 || removed[0].Target() != "*.example.com:443" {
		t.Errorf("forget *.example.com: %v %v", removed, err)
	}
}
