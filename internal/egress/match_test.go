package egress

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func mustMatcher(t testing.TB, allow, deny, rules []string) *Matcher {
	t.Helper()
	m, err := CompileMatcher(allow, deny, rules)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecide(t *testing.T) {
	t.Parallel()
	m := mustMatcher(t,
		[]string{"api.anthropic.com", "*.github.com:443", "registry.npmjs.org", "example.org:*", "[2001:db8::1]:443", "10.0.0.0/8", "wild.example.net:8443"},
		[]string{"evil.github.com", "*.blocked.github.com", "example.org:25"},
		[]string{"GET api.github.com/repos/myorg/**", "GET,POST uploads.github.com/x/*/y", "* registry.yarnpkg.com/**", "GET files.example.com/*.tgz"},
	)
	tests := []struct {
		name               string
		method, host, path string
		port               int
		want               Verdict
	}{
		{"exact", "", "api.anthropic.com", "", 443, Verdict{Allowed: true, Rule: "api.anthropic.com", Reason: "host-allowed"}},
		{"exact case and dot", "", "API.Anthropic.COM.", "", 443, Verdict{Allowed: true, Rule: "api.anthropic.com", Reason: "host-allowed"}},
		{"default port 80", "", "api.anthropic.com", "", 80, Verdict{Allowed: true, Rule: "api.anthropic.com", Reason: "host-allowed"}},
		{"other port", "", "api.anthropic.com", "", 22, Verdict{Rule: "api.anthropic.com", Reason: "port-not-allowed"}},
		{"subdomain of exact", "", "x.api.anthropic.com", "", 443, Verdict{Reason: "host-not-allowed"}},
		{"wildcard sub", "", "gist.github.com", "", 443, Verdict{Allowed: true, Rule: "*.github.com:443", Reason: "host-allowed"}},
		{"wildcard deep", "", "a.b.github.com", "", 443, Verdict{Allowed: true, Rule: "*.github.com:443", Reason: "host-allowed"}},
		{"wildcard port", "", "gist.github.com", "", 80, Verdict{Rule: "*.github.com:443", Reason: "port-not-allowed"}},
		{"wildcard not bare", "", "github.com", "", 443, Verdict{Reason: "host-not-allowed"}},
		{"suffix slip", "", "evilgithub.com", "", 443, Verdict{Reason: "host-not-allowed"}},
		{"suffix slip 2", "", "github.com.evil.net", "", 443, Verdict{Reason: "host-not-allowed"}},
		{"deny wins", "", "evil.github.com", "", 443, Verdict{Rule: "evil.github.com", Reason: "host-denied"}},
		{"deny wildcard", "", "x.blocked.github.com", "", 443, Verdict{Rule: "*.blocked.github.com", Reason: "host-denied"}},
		{"deny port only", "", "example.org", "", 25, Verdict{Rule: "example.org:25", Reason: "host-denied"}},
		{"any port", "", "example.org", "", 5432, Verdict{Allowed: true, Rule: "example.org:*", Reason: "host-allowed"}},
		{"v6 literal", "", "[2001:db8::1]", "", 443, Verdict{Allowed: true, Rule: "[2001:db8::1]:443", Reason: "host-allowed"}},
		{"cidr", "", "10.1.2.3", "", 5432, Verdict{Allowed: true, Rule: "10.0.0.0/8", Reason: "host-allowed"}},
		{"cidr legacy form", "", "0xa.1", "", 5432, Verdict{Allowed: true, Rule: "10.0.0.0/8", Reason: "host-allowed"}},
		{"ip not in cidr", "", "11.0.0.1", "", 443, Verdict{Reason: "host-not-allowed"}},
		{"invalid", "", "a_b.com", "", 443, Verdict{Reason: "invalid-host"}},
		{"metadata name", "", "metadata.google.internal", "", 80, Verdict{Reason: "metadata-destination"}},
		{"rule host connect", "", "api.github.com", "", 443, Verdict{Allowed: true, Rule: "GET api.github.com/repos/myorg/**", Reason: "rule-matched", Inspect: true}},
		{"rule ok", "GET", "api.github.com", "/repos/myorg/x/issues", 443, Verdict{Allowed: true, Rule: "GET api.github.com/repos/myorg/**", Reason: "rule-matched", Inspect: true}},
		{"rule ** zero segs", "GET", "api.github.com", "/repos/myorg", 443, Verdict{Allowed: true, Rule: "GET api.github.com/repos/myorg/**", Reason: "rule-matched", Inspect: true}},
		{"rule method", "POST", "api.github.com", "/repos/myorg/x", 443, Verdict{Rule: "GET api.github.com/repos/myorg/**", Reason: "method-not-allowed", Inspect: true}},
		{"rule path", "GET", "api.github.com", "/repos/other/x", 443, Verdict{Reason: "path-not-allowed", Inspect: true}},
		{"rule path prefix trick", "GET", "api.github.com", "/repos/myorgx/a", 443, Verdict{Reason: "path-not-allowed", Inspect: true}},
		{"rule port", "GET", "api.github.com", "/repos/myorg/x", 8443, Verdict{Rule: "*.github.com:443", Reason: "port-not-allowed"}},
		{"rule single star", "POST", "uploads.github.com", "/x/abc/y", 443, Verdict{Allowed: true, Rule: "GET,POST uploads.github.com/x/*/y", Reason: "rule-matched", Inspect: true}},
		{"rule single star not two", "POST", "uploads.github.com", "/x/a/b/y", 443, Verdict{Reason: "path-not-allowed", Inspect: true}},
		{"rule single star not empty", "POST", "uploads.github.com", "/x//y", 443, Verdict{Reason: "path-not-allowed", Inspect: true}},
		{"rule any method", "DELETE", "registry.yarnpkg.com", "/a", 443, Verdict{Allowed: true, Rule: "* registry.yarnpkg.com/**", Reason: "rule-matched", Inspect: true}},
		{"rule in-segment glob", "GET", "files.example.com", "/pkg-1.0.tgz", 443, Verdict{Allowed: true, Rule: "GET files.example.com/*.tgz", Reason: "rule-matched", Inspect: true}},
		{"rule in-segment glob miss", "GET", "files.example.com", "/pkg-1.0.zip", 443, Verdict{Reason: "path-not-allowed", Inspect: true}},
		{"allowed host without rules", "GET", "gist.github.com", "/", 443, Verdict{Allowed: true, Rule: "*.github.com:443", Reason: "host-allowed"}},
		{"port 0", "", "api.anthropic.com", "", 0, Verdict{Reason: "port-not-allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.Decide(tt.method, tt.host, tt.port, tt.path)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide(%q, %q, %d, %q) (-want +got):\n%s", tt.method, tt.host, tt.port, tt.path, diff)
			}
		})
	}
}

func TestCompileMatcherErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		allow, deny, rules []string
	}{
		{"bare star", []string{"*"}, nil, nil},
		{"star port", []string{"*:443"}, nil, nil},
		{"inner wildcard", []string{"a.*.com"}, nil, nil},
		{"partial wildcard", []string{"*x.com"}, nil, nil},
		{"double wildcard", []string{"*.*.com"}, nil, nil},
		{"wildcard tld", []string{"*.com"}, nil, nil},
		{"wildcard public suffix", []string{"*.co.uk"}, nil, nil},
		{"wildcard ip", []string{"*.1.2.3.4"}, nil, nil},
		{"bad port", []string{"a.com:0"}, nil, nil},
		{"bad host", []string{"a_b.com"}, nil, nil},
		{"nul", nil, []string{"a.com\x00"}, nil},
		{"rule no host", nil, nil, []string{"GET"}},
		{"rule lower method", nil, nil, []string{"get a.com/x"}},
		{"rule bad method", nil, nil, []string{"G-T a.com/x"}},
		{"rule ** in segment", nil, nil, []string{"GET a.com/x**"}},
		{"rule crlf path", nil, nil, []string{"GET a.com/x\r\nX: y"}},
		{"rule space path", nil, nil, []string{"GET a.com/x y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := CompileMatcher(tt.allow, tt.deny, tt.rules); err == nil {
				t.Fatal("CompileMatcher succeeded, want error")
			} else if !strings.HasPrefix(err.Error(), "egress: ") {
				t.Fatalf("error %q lacks the egress prefix", err)
			}
		})
	}
}

// TestDecideGolden renders a decision table; refresh with -update.
func TestDecideGolden(t *testing.T) {
	t.Parallel()
	m := mustMatcher(t,
		[]string{"api.anthropic.com", "*.github.com:443", "registry.npmjs.org"},
		[]string{"evil.github.com"},
		[]string{"GET api.github.com/repos/myorg/**", "* registry.yarnpkg.com/**"},
	)
	reqs := []struct {
		method, host string
		port         int
		path         string
	}{
		{"", "api.anthropic.com", 443, ""},
		{"", "api.anthropic.com", 22, ""},
		{"", "github.com", 443, ""},
		{"", "raw.github.com", 443, ""},
		{"", "evil.github.com", 443, ""},
		{"", "evilgithub.com", 443, ""},
		{"", "github.com.evil.net", 443, ""},
		{"GET", "api.github.com", 443, "/repos/myorg/warden"},
		{"POST", "api.github.com", 443, "/repos/myorg/warden"},
		{"GET", "api.github.com", 443, "/gists"},
		{"PUT", "registry.yarnpkg.com", 443, "/x"},
		{"", "0x7f.1", 80, ""},
		{"", "evil.com\x00.api.anthropic.com", 443, ""},
	}
	var b strings.Builder
	for _, r := range reqs {
		v := m.Decide(r.method, r.host, r.port, r.path)
		fmt.Fprintf(&b, "%-6s %-40q %5d %-22s -> allowed=%-5v inspect=%-5v reason=%-18s rule=%q\n",
			r.method, r.host, r.port, r.path, v.Allowed, v.Inspect, v.Reason, v.Rule)
	}
	golden := filepath.Join("testdata", "decide.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("decisions differ from %s (-want +got):\n%s", golden, diff)
	}
}

func FuzzRuleMatch(f *testing.F) {
	f.Add("*.github.com", "GET api.github.com/repos/**", "api.github.com", 443, "GET", "/repos/x")
	f.Add("evil.com:25", "* evil.com/**", "evil.com", 25, "POST", "/")
	f.Add("10.0.0.0/8", "GET 10.1.1.1/x", "0xa.1.1.1", 80, "GET", "/x")
	f.Add("a.com", "GET a.com", "A.COM.", 80, "GET", "/")
	f.Fuzz(func(t *testing.T, pat, rule, host string, port int, method, path string) {
		// Deny-listed is never allowed, whatever else allows it.
		m, err := CompileMatcher([]string{pat}, []string{pat}, []string{rule})
		if err != nil {
			return
		}
		asAllow, err := CompileMatcher([]string{pat}, nil, nil)
		if err != nil {
			t.Fatalf("pattern compiled as deny but not as allow: %v", err)
		}
		v := m.Decide(method, host, port, path)
		a := asAllow.Decide(method, host, port, path)
		if a.Allowed && v.Allowed {
			t.Fatalf("deny-listed %q allowed for %q:%d: %+v", pat, host, port, v)
		}
		if v.Allowed && v.Rule == "" {
			t.Fatalf("allowed without a rule: %+v", v)
		}
		// An allow implies a valid, normalisable host.
		if v.Allowed {
			if _, err := NormalizeHost(host); err != nil {
				t.Fatalf("allowed invalid host %q", host)
			}
		}
		// Normalisation is the only thing that makes two spellings equal.
		if n, err := NormalizeHost(host); err == nil {
			if w := m.Decide(method, n, port, path); w != v {
				t.Fatalf("Decide(%q)=%+v but Decide(%q)=%+v", host, v, n, w)
			}
		}
	})
}

func BenchmarkDecide10kRules(b *testing.B) {
	var allow, deny, rules []string
	for i := range 4000 {
		allow = append(allow, fmt.Sprintf("host%d.example%d.com", i, i%50))
	}
	for i := range 3000 {
		allow = append(allow, fmt.Sprintf("*.svc%d.example.org:443", i))
	}
	for i := range 1000 {
		deny = append(deny, fmt.Sprintf("bad%d.example%d.com", i, i%50))
	}
	for i := range 2000 {
		rules = append(rules, fmt.Sprintf("GET,POST api%d.example.net/repos/org%d/**", i%200, i))
	}
	m := mustMatcher(b, allow, deny, rules)
	reqs := []struct {
		method, host, path string
		want               bool
	}{
		{"GET", "host3999.example49.com", "/", true},
		{"GET", "a.b.c.svc2999.example.org", "/", true},
		{"GET", "bad5.example5.com", "/", false},
		{"GET", "api150.example.net", "/repos/org1950/x/y", true},
		{"DELETE", "api150.example.net", "/repos/org1950/x/y", false},
		{"GET", "nothing.here.example.com", "/", false},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r := reqs[i%len(reqs)]
		if v := m.Decide(r.method, r.host, 443, r.path); v.Allowed != r.want {
			b.Fatalf("%+v: %+v", r, v)
		}
	}
}

func TestInterceptHosts(t *testing.T) {
	t.Parallel()
	got, err := InterceptHosts(Config{
		Rules:       []string{"GET api.github.com/repos/**", "* *.npmjs.org/**", "GET [::1]:8080/x", "GET API.GITHUB.COM/x"},
		Credentials: []Credential{{Host: "Api.Anthropic.com"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"*.npmjs.org", "::1", "api.anthropic.com", "api.github.com"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
