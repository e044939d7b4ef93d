package egress

import (
	"bufio"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/egress/mitm"
)

// Limits and timeouts.
const (
	maxHeaderBytes   = 64 << 10
	handshakeTimeout = 30 * time.Second
	idleTimeout      = 2 * time.Minute
	dialTimeout      = 15 * time.Second
	askTimeout       = 2 * time.Minute
)

// Resolver looks up host addresses; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Credential is a secret injected into intercepted requests to one host.
type Credential struct {
	Host   string // exact host (normalised by New)
	Header string // header to set, overwriting; default "Authorization"
	// Value returns the secret. The header is set to "Basic
	// base64(value)" with Basic (value is "user:password"), to "Bearer
	// value" for the Authorization header, and to the value itself for any
	// other header (x-api-key and the like). Placeholders are replaced by
	// the bare value.
	Value func() string
	Basic bool
	// Placeholder is the stand-in the sandbox sees. In requests to Host it
	// is replaced by the secret in header values and the query; a request
	// to any other host that carries it is refused (credential-scope).
	Placeholder string
}

// Config configures a Proxy. See the package documentation.
type Config struct {
	Allow        []string // host patterns, see CompileMatcher
	Deny         []string // host patterns; deny wins
	Rules        []string // "METHODS host[/path]"; hosts named here need a matching rule
	AllowPrivate bool     // allow private destinations (never metadata)
	// Hosts maps names to addresses, consulted before Resolver.
	Hosts map[string]string
	// Token is required: HTTP clients send Proxy-Authorization Basic with
	// any user and the token as password; SOCKS5 clients use RFC 1929
	// username/password auth with the token as password.
	Token string
	// CA enables TLS interception of hosts governed by Rules or targeted by
	// Credentials. Nil disables it, and tunnels to such hosts are refused.
	CA          *mitm.CA
	Credentials []Credential
	Resolver    Resolver                                                          // default: a net.Resolver
	Dial        func(ctx context.Context, network, addr string) (net.Conn, error) // default: a net.Dialer
	RootCAs     *x509.CertPool                                                    // upstream roots; nil: system
	Logger      *slog.Logger                                                      // default: discard
	Audit       io.Writer                                                         // JSON lines, one per decision
	// Ask is consulted for hosts no pattern decides; nil denies. Concurrent
	// asks for one host:port share one call, and the answer is kept for
	// the proxy's lifetime.
	Ask func(ctx context.Context, host string, port int) Decision
	Now func() time.Time // audit timestamps; default time.Now
}

// Proxy is the egress proxy. Create it with New.
type Proxy struct {
	cfg     Config
	m       *Matcher
	hosts   map[string]netip.Addr
	creds   map[string][]Credential
	log     *slog.Logger
	audit   *auditLog
	dialFn  func(ctx context.Context, network, addr string) (net.Conn, error)
	res     Resolver
	upTrans *http.Transport

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup

	askMu    sync.Mutex
	asking   map[string]*askCall
	answered map[string]Decision
}

type askCall struct {
	done chan struct{}
	d    Decision
}

// New validates cfg and builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Token == "" {
		return nil, errors.New("egress: a session token is required")
	}
	m, err := CompileMatcher(cfg.Allow, cfg.Deny, cfg.Rules)
	if err != nil {
		return nil, err
	}
	if !cfg.AllowPrivate {
		for a := range m.allow.addrs {
			if AddrReason(a, false) != "" {
				return nil, fmt.Errorf("egress: allow entry %s is a private address; set allow-private to use it", a)
			}
		}
		for _, byBits := range m.allow.prefixes {
			for pfx := range byBits {
				if prefixIsPrivate(pfx) {
					return nil, fmt.Errorf("egress: allow entry %s covers private addresses; set allow-private to use it", pfx)
				}
			}
		}
	}
	p := &Proxy{
		cfg:       cfg,
		m:         m,
		hosts:     map[string]netip.Addr{},
		creds:     map[string][]Credential{},
		log:       cfg.Logger,
		dialFn:    cfg.Dial,
		res:       cfg.Resolver,
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]struct{}{},
		asking:    map[string]*askCall{},
		answered:  map[string]Decision{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.cfg.Now == nil {
		p.cfg.Now = time.Now
	}
	p.audit = newAuditLog(cfg.Audit, p.cfg.Now)
	if p.dialFn == nil {
		d := &net.Dialer{Timeout: dialTimeout}
		p.dialFn = d.DialContext
	}
	if p.res == nil {
		p.res = &net.Resolver{}
	}
	for name, ip := range cfg.Hosts {
		n, err := NormalizeHost(name)
		if err != nil {
			return nil, fmt.Errorf("egress: hosts entry: %w", err)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("egress: hosts entry %q: %w", name, err)
		}
		p.hosts[n] = a.Unmap()
	}
	for i, c := range cfg.Credentials {
		h, err := NormalizeHost(c.Host)
		if err != nil {
			return nil, fmt.Errorf("egress: credential %d: %w", i, err)
		}
		if c.Value == nil {
			return nil, fmt.Errorf("egress: credential %d for %s has no value", i, h)
		}
		if c.Header == "" {
			c.Header = "Authorization"
		}
		if c.Placeholder != "" && len(c.Placeholder) < 8 {
			return nil, fmt.Errorf("egress: credential %d for %s: placeholder shorter than 8 bytes", i, h)
		}
		c.Host = h
		p.creds[h] = append(p.creds[h], c)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.upTrans = &http.Transport{
		Proxy:                  nil, // never chain through HTTP(S)_PROXY
		DialContext:            p.transportDial,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    dialTimeout,
		DisableCompression:     true,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  5 * time.Minute,
		MaxResponseHeaderBytes: maxHeaderBytes,
		// HTTP/1.1 upstream keeps WebSocket upgrades simple.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return p, nil
}

// Matcher returns the compiled matcher.
func (p *Proxy) Matcher() *Matcher { return p.m }

// Serve accepts connections on l until Close. It returns ErrClosed after
// Close and the accept error otherwise.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("egress: accept: %w", err)
		}
		backoff = 0
		if !p.track(c) {
			c.Close()
			return ErrClosed
		}
		p.wg.Go(func() {
			defer p.untrack(c)
			defer c.Close()
			p.serveConn(c)
		})
	}
}

// Close stops every listener and connection and waits for handlers.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var closers []io.Closer
	for l := range p.listeners {
		closers = append(closers, l)
	}
	for c := range p.conns {
		closers = append(closers, c)
	}
	p.mu.Unlock()
	// Closed outside the lock: a trackedConn untracks itself on Close.
	for _, c := range closers {
		c.Close()
	}
	p.cancel()
	p.wg.Wait()
	p.upTrans.CloseIdleConnections()
	return nil
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// trackedConn untracks itself on Close.
type trackedConn struct {
	net.Conn
	p    *Proxy
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.p.untrack(c) })
	return c.Conn.Close()
}

// CloseWrite half-closes when the underlying connection supports it.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// serveConn sniffs the protocol: SOCKS5 starts with 0x05, anything else
// is HTTP.
func (p *Proxy) serveConn(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReaderSize(c, maxHeaderBytes)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, br)
		return
	}
	p.serveHTTP(c, br)
}

// authorized checks HTTP Proxy-Authorization: Basic with the token as
// password.
func (p *Proxy) authorized(h http.Header) bool {
	v := h.Get("Proxy-Authorization")
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	_, pass, ok := strings.Cut(string(raw), ":")
	return ok && p.tokenOK(pass)
}

func (p *Proxy) tokenOK(s string) bool {
	return subtle.ConstantTimeCompare([]byte(s), []byte(p.cfg.Token)) == 1
}

// decide runs the matcher, then Ask for undecided hosts, and audits.
func (p *Proxy) decide(ctx context.Context, kind, method, host string, port int, path string) Verdict {
	name, addr, err := parseHost(host)
	var v Verdict
	if err != nil {
		v = Verdict{Reason: ReasonInvalidHost}
	} else {
		v = p.m.decide(method, name, addr, port, path)
		if !v.Allowed && v.Reason == ReasonHostNotAllowed && p.cfg.Ask != nil {
			if p.ask(ctx, host, port) == DecisionAllow {
				v = Verdict{Allowed: true, Rule: "ask", Reason: reasonAllowAsk}
			} else {
				v = Verdict{Rule: "ask", Reason: ReasonAskDenied}
			}
		}
	}
	p.record(kind, host, port, method, path, v)
	return v
}

func (p *Proxy) record(kind, host string, port int, method, path string, v Verdict) {
	d := "deny"
	if v.Allowed {
		d = "allow"
	}
	if err := p.audit.write(auditRecord{Kind: kind, Host: host, Port: port, Method: method, Path: path, Decision: d, Rule: v.Rule, Reason: v.Reason}); err != nil {
		p.log.Warn("audit write failed", "err", err)
	}
	p.log.Debug("egress decision", "kind", kind, "host", host, "port", port, "method", method, "decision", d, "rule", v.Rule, "reason", v.Reason)
}

// ask calls Config.Ask once per host:port, sharing concurrent calls.
func (p *Proxy) ask(ctx context.Context, host string, port int) Decision {
	key := hostPort(host, port)
	p.askMu.Lock()
	if d, ok := p.answered[key]; ok {
		p.askMu.Unlock()
		return d
	}
	c := p.asking[key]
	if c == nil {
		c = &askCall{done: make(chan struct{})}
		p.asking[key] = c
		p.wg.Go(func() {
			actx, cancel := context.WithTimeout(p.ctx, askTimeout)
			defer cancel()
			d := p.cfg.Ask(actx, host, port)
			if actx.Err() != nil {
				d = DecisionDeny
			}
			p.askMu.Lock()
			c.d = d
			delete(p.asking, key)
			if p.ctx.Err() == nil {
				p.answered[key] = d
			}
			p.askMu.Unlock()
			close(c.done)
		})
	}
	p.askMu.Unlock()
	select {
	case <-c.done:
		return c.d
	case <-ctx.Done():
		return DecisionDeny
	}
}

// lookup resolves a name: Hosts first, then the Resolver.
func (p *Proxy) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	if a, ok := p.hosts[name]; ok {
		return []netip.Addr{a}, nil
	}
	addrs, err := p.res.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil, fmt.Errorf("egress: resolve %s: %w", name, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("egress: resolve %s: no addresses", name)
	}
	return addrs, nil
}

// resolveChecked resolves host and checks every address: any refused
// address refuses the destination, so mixed answers cannot smuggle a
// private address in.
func (p *Proxy) resolveChecked(ctx context.Context, host string, port int) ([]netip.Addr, error) {
	name, addr, err := parseHost(host)
	if err != nil {
		return nil, &DenyError{Reason: ReasonInvalidHost, Host: host, Port: port}
	}
	if !addr.IsValid() && metadataNames[name] {
		return nil, &DenyError{Reason: ReasonMetadata, Host: host, Port: port}
	}
	addrs := []netip.Addr{addr}
	if !addr.IsValid() {
		addrs, err = p.lookup(ctx, name)
		if err != nil {
			return nil, err
		}
	}
	for i, a := range addrs {
		a = a.WithZone("")
		addrs[i] = a.Unmap()
		if r := AddrReason(a, p.cfg.AllowPrivate); r != "" {
			return nil, &DenyError{Reason: r, Host: host, Port: port, Addr: a}
		}
		var deny *pattern
		p.m.deny.each("", a.Unmap(), func(pt *pattern) bool {
			if pt.portOK(port, true) {
				deny = pt
				return true
			}
			return false
		})
		if deny != nil {
			return nil, &DenyError{Reason: ReasonHostDenied, Rule: deny.text, Host: host, Port: port, Addr: a}
		}
	}
	return addrs, nil
}

// dialChecked resolves, checks and dials one of the checked addresses; it
// never resolves again after the check.
func (p *Proxy) dialChecked(ctx context.Context, kind, host string, port int) (net.Conn, error) {
	addrs, err := p.resolveChecked(ctx, host, port)
	if err != nil {
		if de, ok := errors.AsType[*DenyError](err); ok {
			p.record(kind, host, port, "", "", Verdict{Rule: de.Rule, Reason: de.Reason})
		}
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var firstErr error
	for _, a := range addrs {
		c, err := p.dialFn(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String()) //nolint:gosec // G115: port was validated to 1..65535
		if err == nil {
			tc := &trackedConn{Conn: c, p: p}
			if !p.track(tc) {
				c.Close()
				return nil, ErrClosed
			}
			return tc, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("egress: dial %s: %w", hostPort(host, port), firstErr)
}

// transportDial is the upstream Transport's DialContext: every new
// upstream connection is checked and pinned.
func (p *Proxy) transportDial(ctx context.Context, _, addr string) (net.Conn, error) {
	h, port, err := ParseAuthority(addr, 0)
	if err != nil {
		return nil, &DenyError{Reason: ReasonInvalidHost, Host: addr}
	}
	return p.dialChecked(ctx, "mitm", h, port)
}

// denyText is the user-facing explanation of a denial.
func denyText(what string, host string, port int, v Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "warden: blocked %s (%s)\n", what, v.Reason)
	hp := host
	if port != 80 && port != 443 {
		hp = hostPort(host, port)
	}
	switch v.Reason {
	case ReasonHostNotAllowed:
		fmt.Fprintf(&b, "To allow it, add %q to network.allow in your warden policy.\n", hp)
	case ReasonHostDenied:
		fmt.Fprintf(&b, "It matches %q in network.deny; deny entries win over allow entries.\n", v.Rule)
	case ReasonPortNotAllowed:
		fmt.Fprintf(&b, "The host is allowed on other ports only. To allow this port, add %q to network.allow.\n", hostPort(host, port))
	case ReasonMethodNotAllowed, ReasonPathNotAllowed:
		fmt.Fprintf(&b, "Requests to %s need a matching rule. To allow it, add a rule such as \"GET %s/path/**\" to network.rules.\n", hp, hp)
	case ReasonPrivateDestination:
		b.WriteString("The destination resolves to a private, loopback or reserved address. Set network.allow_private if this is intended.\n")
	case ReasonMetadata:
		b.WriteString("Cloud metadata endpoints are always blocked.\n")
	case ReasonInvalidHost:
		b.WriteString("The host name is not valid (only letters, digits, hyphens and IDNA names).\n")
	case ReasonHostMismatch:
		b.WriteString("The Host header must name the same host as the request target or tunnel.\n")
	case ReasonCredentialScope:
		b.WriteString("The request carries a credential placeholder that belongs to another host; credentials are only sent to their own host.\n")
	case ReasonAskDenied:
		b.WriteString("The request was refused at the prompt. To allow it permanently, add the host to network.allow.\n")
	case ReasonAuth:
		b.WriteString("The proxy needs the session token; use the proxy settings warden put in the environment.\n")
	default:
		b.WriteString("See `warden policy show --effective` for the network policy.\n")
	}
	return b.String()
}

// writeDeny writes a raw HTTP/1.1 denial on a client connection.
func writeDeny(w io.Writer, status int, what, host string, port int, v Verdict, keepAlive bool) error {
	body := denyText(what, host, port, v)
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	switch {
	case status >= 500:
		fmt.Fprintf(&b, "X-Warden-Error: %s\r\n", v.Reason)
	case v.Reason != "":
		fmt.Fprintf(&b, "X-Warden-Deny: %s\r\n", v.Reason)
	}
	if v.Rule != "" && validHeaderValue(v.Rule) {
		fmt.Fprintf(&b, "X-Warden-Rule: %s\r\n", v.Rule)
	}
	if status == http.StatusProxyAuthRequired {
		b.WriteString("Proxy-Authenticate: Basic realm=\"warden\"\r\n")
	}
	if !keepAlive {
		b.WriteString("Connection: close\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	_, err := io.WriteString(w, b.String())
	return err
}

// denyHTTP writes a denial through a ResponseWriter (intercepted requests).
func denyHTTP(w http.ResponseWriter, status int, what, host string, port int, v Verdict) {
	body := denyText(what, host, port, v)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Warden-Deny", v.Reason)
	if v.Rule != "" && validHeaderValue(v.Rule) {
		h.Set("X-Warden-Rule", v.Rule)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// splice copies both ways until both directions finish, half-closing as
// each side ends. Wrappers are peeled off so that io.Copy can use splice(2)
// between the raw sockets.
func splice(client, upstream net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst net.Conn, w io.Writer, r io.Reader) {
		defer wg.Done()
		_, _ = io.Copy(w, r)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
		dst.Close()
	}
	go cp(upstream, rawConn(upstream, false), rawConn(client, true))
	go cp(client, rawConn(client, false), rawConn(upstream, true))
	wg.Wait()
}

// rawConn unwraps proxy wrappers. For reading, a bufConn is only unwrapped
// when its buffer is empty.
func rawConn(c net.Conn, reading bool) net.Conn {
	for {
		switch w := c.(type) {
		case *trackedConn:
			c = w.Conn
		case *bufConn:
			if reading {
				if br, ok := w.r.(*bufio.Reader); !ok || br.Buffered() > 0 {
					return c
				}
			}
			c = w.Conn
		default:
			return c
		}
	}
}
