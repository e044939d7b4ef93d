package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Denial reason kinds, sent in the X-Warden-Deny header and the audit log.
const (
	ReasonHostNotAllowed     = "host-not-allowed"
	ReasonHostDenied         = "host-denied"
	ReasonPortNotAllowed     = "port-not-allowed"
	ReasonMethodNotAllowed   = "method-not-allowed"
	ReasonPathNotAllowed     = "path-not-allowed"
	ReasonPrivateDestination = "private-destination"
	ReasonMetadata           = "metadata-destination"
	ReasonInvalidHost        = "invalid-host"
	ReasonInvalidRequest     = "invalid-request"
	ReasonHostMismatch       = "host-mismatch"
	ReasonCredentialScope    = "credential-scope" //nolint:gosec // G101: a reason name, not a credential
	ReasonAskDenied          = "ask-denied"
	ReasonUpstream           = "upstream-unreachable"
	ReasonAuth               = "proxy-auth-required"
	ReasonUpgrade            = "upgrade-not-allowed"
	ReasonNoInspection       = "inspection-unavailable"
)

// Reasons for allows, recorded in the audit log.
const (
	reasonAllowHost = "host-allowed"
	reasonAllowRule = "rule-matched"
	reasonAllowAsk  = "ask-allowed"
)

// Verdict is the outcome of [Matcher.Decide].
type Verdict struct {
	Allowed bool
	Rule    string // the pattern that decided, as written; "" if none did
	Reason  string // a Reason* kind for denials, or why it was allowed
	// Inspect is set when method/path rules govern the host, so that a
	// tunnel to it must be intercepted and each request decided.
	Inspect bool
}

// metadataNames are cloud metadata host names, refused whatever the policy.
var metadataNames = map[string]bool{
	"metadata.google.internal":   true,
	"metadata.goog":              true,
	"metadata":                   true,
	"instance-data":              true,
	"instance-data.ec2.internal": true,
	"metadata.azure.internal":    true,
	"metadata.tencentyun.com":    true,
}

// pattern is one compiled Allow, Deny or Rules entry.
type pattern struct {
	text    string
	anyPort bool
	ports   []int    // empty and !anyPort: 80 and 443 (allow) or every port (deny)
	methods []string // nil: any method
	path    []string // nil: any path; else segments, "*" one, "**" any number
}

func (p *pattern) portOK(port int, deny bool) bool {
	if p.anyPort {
		return true
	}
	if len(p.ports) == 0 {
		return deny || port == 80 || port == 443
	}
	return slices.Contains(p.ports, port)
}

func (p *pattern) methodOK(m string) bool {
	return p.methods == nil || slices.Contains(p.methods, m)
}

// hostIndex finds the patterns that apply to a host without scanning them
// all: exact names in a map, "*.suffix" wildcards by walking the host's
// label suffixes, IPs in a map and CIDRs in one map per prefix length.
type hostIndex struct {
	exact    map[string][]*pattern
	wild     map[string][]*pattern
	addrs    map[netip.Addr][]*pattern
	prefixes map[int]map[netip.Prefix][]*pattern
	bits     []int
}

func newHostIndex() *hostIndex {
	return &hostIndex{
		exact:    map[string][]*pattern{},
		wild:     map[string][]*pattern{},
		addrs:    map[netip.Addr][]*pattern{},
		prefixes: map[int]map[netip.Prefix][]*pattern{},
	}
}

// each calls fn for every pattern whose host part matches, stopping early
// when fn returns true.
func (ix *hostIndex) each(name string, addr netip.Addr, fn func(*pattern) bool) {
	call := func(ps []*pattern) bool {
		return slices.ContainsFunc(ps, fn)
	}
	if addr.IsValid() {
		if call(ix.addrs[addr]) {
			return
		}
		for _, b := range ix.bits {
			pfx, err := addr.Prefix(b)
			if err != nil {
				continue
			}
			if call(ix.prefixes[b][pfx]) {
				return
			}
		}
		return
	}
	if call(ix.exact[name]) {
		return
	}
	// "*.github.com" is stored under "github.com" and matches strict
	// subdomains only: walk the suffixes after each dot.
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if call(ix.wild[name[i+1:]]) {
				return
			}
		}
	}
}

// Matcher is a compiled set of Allow, Deny and Rules patterns. It is safe
// for concurrent use.
type Matcher struct {
	allow, deny, rules *hostIndex
}

// CompileMatcher compiles host patterns and request rules.
//
// Host patterns (allow and deny) are "name", "*.name" (strict subdomains
// only: "*.github.com" matches "api.github.com" but not "github.com"), an
// IP literal, or a CIDR ("10.0.0.0/8", any port), each optionally followed
// by ":port" or ":*". An allow pattern without a port allows 80 and 443; a
// deny pattern without a port denies every port. A bare "*" is refused.
//
// Rules are "METHODS hostpattern[/path]" where METHODS is "*" or a comma
// list ("GET,POST") and the path is a glob of segments: "*" matches one
// segment and "**" any number (including none); "/**" or no path matches
// everything. A host:port that any rule names is governed by rules only
// (requests need a matching rule; an Allow entry for it does not widen it),
// and such a rule also makes the host reachable.
func CompileMatcher(allow, deny, rules []string) (*Matcher, error) {
	m := &Matcher{allow: newHostIndex(), deny: newHostIndex(), rules: newHostIndex()}
	for _, s := range allow {
		if err := m.allow.add(s, s, nil, nil); err != nil {
			return nil, err
		}
	}
	for _, s := range deny {
		if err := m.deny.add(s, s, nil, nil); err != nil {
			return nil, err
		}
	}
	for _, s := range rules {
		methods, rest, ok := strings.Cut(strings.TrimSpace(s), " ")
		if !ok {
			return nil, fmt.Errorf("egress: rule %q: want \"METHODS host/path\"", s)
		}
		rest = strings.TrimSpace(rest)
		var ms []string
		if methods != "*" {
			for m := range strings.SplitSeq(methods, ",") {
				if m == "" || strings.ToUpper(m) != m || strings.ContainsFunc(m, func(r rune) bool { return r < 'A' || r > 'Z' }) {
					return nil, fmt.Errorf("egress: rule %q: bad method %q", s, m)
				}
				ms = append(ms, m)
			}
		}
		hostPart, pathPart := rest, ""
		if i := strings.IndexByte(rest, '/'); i >= 0 && !isCIDRPattern(rest) {
			hostPart, pathPart = rest[:i], rest[i:]
		}
		if strings.ContainsFunc(pathPart, func(r rune) bool {
			return r <= ' ' || r == 0x7f || strings.ContainsRune("\\?#%", r)
		}) {
			return nil, fmt.Errorf("egress: rule %q: path has a forbidden byte", s)
		}
		var segs []string
		if pathPart != "" && pathPart != "/**" {
			segs = strings.Split(pathPart[1:], "/")
			for _, g := range segs {
				if strings.Contains(g, "**") && g != "**" {
					return nil, fmt.Errorf("egress: rule %q: \"**\" must be a whole segment", s)
				}
			}
		}
		if err := m.rules.add(s, hostPart, ms, segs); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func isCIDRPattern(s string) bool {
	_, err := netip.ParsePrefix(s)
	return err == nil
}

func (ix *hostIndex) add(text, hp string, methods, path []string) error {
	p := &pattern{text: text, methods: methods, path: path}
	bad := func(why string) error { return fmt.Errorf("egress: pattern %q: %s", text, why) }
	if pfx, err := netip.ParsePrefix(hp); err == nil {
		if pfx.Addr().Zone() != "" {
			return bad("zoned prefix")
		}
		pfx = pfx.Masked()
		if pfx.Addr().Is4In6() {
			return bad("IPv4-mapped prefix; write the IPv4 form")
		}
		p.anyPort = true
		b := pfx.Bits()
		if ix.prefixes[b] == nil {
			ix.prefixes[b] = map[netip.Prefix][]*pattern{}
			ix.bits = append(ix.bits, b)
			slices.Sort(ix.bits)
			slices.Reverse(ix.bits) // most specific first
		}
		ix.prefixes[b][pfx] = append(ix.prefixes[b][pfx], p)
		return nil
	}
	host := hp
	// Split an optional port: "[v6]:443", "name:443", "name:*".
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return bad("unterminated bracket")
		}
		host = hp[:end+1]
		if rest := hp[end+1:]; rest != "" {
			if rest[0] != ':' {
				return bad("junk after bracket")
			}
			if err := p.setPort(rest[1:]); err != nil {
				return bad(err.Error())
			}
		}
	} else if i := strings.LastIndexByte(hp, ':'); i >= 0 && strings.Count(hp, ":") == 1 {
		host = hp[:i]
		if err := p.setPort(hp[i+1:]); err != nil {
			return bad(err.Error())
		}
	}
	if host == "*" || host == "" {
		return bad("a bare \"*\" or empty host is not allowed")
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		name, addr, err := parseHost(rest)
		if err != nil {
			return bad(err.Error())
		}
		if addr.IsValid() {
			return bad("wildcard over an IP address")
		}
		if ps, icann := publicsuffix.PublicSuffix(name); icann && ps == name {
			return bad("wildcard over a public suffix")
		}
		ix.wild[name] = append(ix.wild[name], p)
		return nil
	}
	if strings.Contains(host, "*") {
		return bad("a wildcard must be exactly one leading \"*.\"")
	}
	name, addr, err := parseHost(host)
	if err != nil {
		return bad(err.Error())
	}
	if addr.IsValid() {
		ix.addrs[addr] = append(ix.addrs[addr], p)
		return nil
	}
	ix.exact[name] = append(ix.exact[name], p)
	return nil
}

func (p *pattern) setPort(s string) error {
	if s == "*" {
		p.anyPort = true
		return nil
	}
	n, err := parsePort(s)
	if err != nil {
		return err
	}
	p.ports = []int{n}
	return nil
}

// Decide decides a request. host is normalised here (see [NormalizeHost]);
// port is the destination port. An empty method decides at host level (a
// CONNECT or SOCKS tunnel): hosts governed by rules are then allowed with
// Inspect set, and each request inside must be decided again with its
// method and path. path is the decoded request path (see cleanPath).
func (m *Matcher) Decide(method, host string, port int, path string) Verdict {
	name, addr, err := parseHost(host)
	if err != nil {
		return Verdict{Reason: ReasonInvalidHost}
	}
	return m.decide(method, name, addr, port, path)
}

func (m *Matcher) decide(method, name string, addr netip.Addr, port int, path string) Verdict {
	if port < 1 || port > 65535 {
		return Verdict{Reason: ReasonPortNotAllowed}
	}
	if !addr.IsValid() && metadataNames[name] {
		return Verdict{Reason: ReasonMetadata}
	}
	var v Verdict
	m.deny.each(name, addr, func(p *pattern) bool {
		if p.portOK(port, true) {
			v = Verdict{Rule: p.text, Reason: ReasonHostDenied}
			return true
		}
		return false
	})
	if v.Reason != "" {
		return v
	}
	var portMiss, methodMiss, governed *pattern
	m.rules.each(name, addr, func(p *pattern) bool {
		if !p.portOK(port, false) {
			portMiss = p
			return false
		}
		if governed == nil {
			governed = p
		}
		if method == "" {
			return true
		}
		if !matchPath(p.path, path) {
			return false
		}
		if !p.methodOK(method) {
			methodMiss = p
			return false
		}
		v = Verdict{Allowed: true, Rule: p.text, Reason: reasonAllowRule, Inspect: true}
		return true
	})
	if v.Allowed {
		return v
	}
	if governed != nil {
		switch {
		case method == "":
			return Verdict{Allowed: true, Rule: governed.text, Reason: reasonAllowRule, Inspect: true}
		case methodMiss != nil:
			return Verdict{Rule: methodMiss.text, Reason: ReasonMethodNotAllowed, Inspect: true}
		default:
			return Verdict{Reason: ReasonPathNotAllowed, Inspect: true}
		}
	}
	m.allow.each(name, addr, func(p *pattern) bool {
		if p.portOK(port, false) {
			v = Verdict{Allowed: true, Rule: p.text, Reason: reasonAllowHost}
			return true
		}
		portMiss = p
		return false
	})
	if v.Allowed {
		return v
	}
	if portMiss != nil {
		return Verdict{Rule: portMiss.text, Reason: ReasonPortNotAllowed}
	}
	return Verdict{Reason: ReasonHostNotAllowed}
}

// matchPath matches a decoded request path against glob segments.
func matchPath(glob []string, path string) bool {
	if glob == nil {
		return true
	}
	if !strings.HasPrefix(path, "/") {
		return false
	}
	return matchSegs(glob, strings.Split(path[1:], "/"))
}

func matchSegs(glob, segs []string) bool {
	for len(glob) > 0 {
		g := glob[0]
		if g == "**" {
			if len(glob) == 1 {
				return true
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(glob[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 || !matchSeg(g, segs[0]) {
			return false
		}
		glob, segs = glob[1:], segs[1:]
	}
	return len(segs) == 0
}

// matchSeg matches one segment; '*' inside a segment matches any run of
// bytes within it.
func matchSeg(g, s string) bool {
	if g == "*" {
		return s != ""
	}
	star := strings.IndexByte(g, '*')
	if star < 0 {
		return g == s
	}
	if !strings.HasPrefix(s, g[:star]) {
		return false
	}
	s = s[star:]
	g = g[star+1:]
	for i := 0; i <= len(s); i++ {
		if matchSeg(g, s[i:]) {
			return true
		}
	}
	return false
}
