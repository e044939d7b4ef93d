package facade

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults applied by New.
const (
	DefaultMaxBody               = 10 << 20
	DefaultDialTimeout           = 2 * time.Second
	DefaultResponseHeaderTimeout = 60 * time.Second
	// DefaultStartWait is how long a request waits for a starting sidecar.
	DefaultStartWait = 30 * time.Second
)

// Config configures a Facade. The zero value is usable for a facade served
// only with ServeUnix; ServeToken requires Token.
type Config struct {
	// Token is the bearer token required on listeners served with
	// ServeToken (and on ServeUnix connections whose peer is not our uid).
	Token string
	// Version is reported by GET /.
	Version string
	// Port is the loopback TCP port advertised inside the sandbox. With it,
	// "127.0.0.1:<Port>" and "localhost:<Port>" are accepted Host values.
	Port int
	// Hosts are extra accepted Host header values (case-insensitive, exact).
	// "warden" and "unix" are always accepted, as are the loopback
	// host:port of every TCP listener and the percent-encoded path of every
	// Unix listener (what http+unix:// clients send).
	Hosts []string
	// MaxBody is the request body limit for routes without their own;
	// 0 means DefaultMaxBody.
	MaxBody int64
	// DialTimeout bounds connecting to a sidecar; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a sidecar's response
	// headers (not the body, so SSE streams are unaffected); 0 means
	// DefaultResponseHeaderTimeout. Exceeding it gives 504 timeout.
	ResponseHeaderTimeout time.Duration
	// StartWait bounds how long a request to a starting route waits;
	// 0 means DefaultStartWait.
	StartWait time.Duration
	// Logger receives the access log and errors; nil discards.
	Logger *slog.Logger
}

// Facade routes requests to skill sidecars. It is an http.Handler; use
// ServeUnix and ServeToken to serve it.
type Facade struct {
	cfg    Config
	log    *slog.Logger
	token  []byte
	euid   int
	ctx    context.Context // parent of every request; canceled by Close
	cancel context.CancelFunc

	routes  atomic.Pointer[map[string]*route]
	hosts   atomic.Pointer[map[string]struct{}]
	changed atomic.Pointer[chan struct{}] // closed and replaced on every route change

	mu      sync.Mutex // serialises writers of routes and hosts; guards below
	servers []*http.Server
	closed  bool
}

var _ http.Handler = (*Facade)(nil)

// New returns a Facade with no routes.
func New(cfg Config) (*Facade, error) {
	if cfg.MaxBody < 0 {
		return nil, errors.New("facade: negative MaxBody")
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("facade: invalid port %d", cfg.Port)
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.StartWait <= 0 {
		cfg.StartWait = DefaultStartWait
	}
	if cfg.ResponseHeaderTimeout <= 0 {
		cfg.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	f := &Facade{
		cfg:   cfg,
		log:   lg,
		token: []byte(cfg.Token),
		euid:  os.Geteuid(),
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	hosts := map[string]struct{}{"warden": {}, "unix": {}}
	if cfg.Port != 0 {
		p := strconv.Itoa(cfg.Port)
		hosts["127.0.0.1:"+p] = struct{}{}
		hosts["localhost:"+p] = struct{}{}
	}
	for _, h := range cfg.Hosts {
		hosts[strings.ToLower(h)] = struct{}{}
	}
	f.hosts.Store(&hosts)
	empty := map[string]*route{}
	f.routes.Store(&empty)
	ch := make(chan struct{})
	f.changed.Store(&ch)
	return f, nil
}

// ServeUnix serves the facade on l, a Unix socket listener (see
// ListenUnix). A connection whose peer credentials show our own effective
// uid is trusted and needs no token; any other connection (or a platform
// without peer credentials) falls back to the token check. Never hand this
// function the socket that the in-sandbox TCP relay targets: use ServeToken.
// Like http.Server.Serve it blocks and returns http.ErrServerClosed after
// Close.
func (f *Facade) ServeUnix(l net.Listener) error {
	if l.Addr().Network() != "unix" {
		return fmt.Errorf("facade: ServeUnix needs a unix listener, got %s", l.Addr().Network())
	}
	return f.serve(l, true)
}

// ServeToken serves the facade on l, requiring the bearer token on every
// request. Use it for the socket the in-sandbox TCP relay connects to and
// for any TCP listener. It returns ErrNoToken if Config.Token is empty.
func (f *Facade) ServeToken(l net.Listener) error {
	if len(f.token) == 0 {
		return ErrNoToken
	}
	return f.serve(l, false)
}

func (f *Facade) serve(l net.Listener, trusted bool) error {
	srv := &http.Server{
		Handler:           f,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return f.ctx },
		ErrorLog:          slog.NewLogLogger(f.log.Handler(), slog.LevelDebug),
	}
	if trusted {
		srv.ConnContext = f.trustConn
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		l.Close()
		return http.ErrServerClosed
	}
	f.servers = append(f.servers, srv)
	f.addListenerHostsLocked(l.Addr())
	f.mu.Unlock()
	return srv.Serve(l)
}

func (f *Facade) addListenerHostsLocked(a net.Addr) {
	old := *f.hosts.Load()
	hosts := make(map[string]struct{}, len(old)+2)
	for h := range old {
		hosts[h] = struct{}{}
	}
	switch a := a.(type) {
	case *net.TCPAddr:
		if a.IP.IsLoopback() {
			p := strconv.Itoa(a.Port)
			hosts[strings.ToLower(net.JoinHostPort(a.IP.String(), p))] = struct{}{}
			hosts["localhost:"+p] = struct{}{}
		}
	case *net.UnixAddr:
		if a.Name != "" && a.Name[0] != '@' {
			hosts[strings.ToLower(escapeSocket(a.Name))] = struct{}{}
		}
	}
	f.hosts.Store(&hosts)
}

type trustedKey struct{}

func (f *Facade) trustConn(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	uid, err := peerUID(uc)
	if err != nil || uid != f.euid {
		f.log.WarnContext(ctx, "untrusted peer on trusted socket", "uid", uid, "err", err)
		return ctx
	}
	return context.WithValue(ctx, trustedKey{}, true)
}

func isTrusted(ctx context.Context) bool {
	v, _ := ctx.Value(trustedKey{}).(bool)
	return v
}

// Close immediately closes all listeners and connections, including
// upgraded (WebSocket) ones and in-flight upstream requests, and the idle
// connections to every sidecar.
func (f *Facade) Close() error {
	servers := f.stop()
	f.cancel()
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	f.closeIdle()
	return errors.Join(errs...)
}

// Shutdown stops accepting, waits for active requests until ctx is done and
// then closes everything like Close. Upgraded connections are not waited
// for.
func (f *Facade) Shutdown(ctx context.Context) error {
	servers := f.stop()
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	f.cancel()
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	f.closeIdle()
	return errors.Join(errs...)
}

func (f *Facade) stop() []*http.Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	s := f.servers
	f.servers = nil
	return s
}

func (f *Facade) closeIdle() {
	for _, rt := range *f.routes.Load() {
		if rt.tr != nil {
			rt.tr.CloseIdleConnections()
		}
	}
}

// ServeHTTP implements http.Handler. Requests reaching it other than through
// ServeUnix always need the token.
func (f *Facade) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	lw := &logWriter{ResponseWriter: w}
	var mount string
	var body *countBody
	defer func() {
		f.logRequest(r, lw, mount, body, start)
	}()

	if len(r.Header.Values("Origin")) > 0 || len(r.Header.Values("Referer")) > 0 {
		writeReason(lw, http.StatusForbidden, ReasonForbiddenOrigin, "requests from browsers are refused", nil)
		return
	}
	if _, ok := (*f.hosts.Load())[strings.ToLower(r.Host)]; !ok {
		writeReason(lw, http.StatusForbidden, ReasonBadHost, "host not allowed", nil)
		return
	}
	if !isTrusted(r.Context()) && !f.tokenOK(r) {
		lw.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
		writeReason(lw, http.StatusUnauthorized, ReasonUnauthorized, "missing or wrong bearer token", nil)
		return
	}
	p, ok := cleanPath(r.URL.EscapedPath())
	if !ok {
		writeReason(lw, http.StatusBadRequest, ReasonBadPath, "bad path", nil)
		return
	}
	if p == "/" {
		f.serveStatus(lw, r)
		return
	}
	mountEsc, rest := p[1:], ""
	if i := strings.IndexByte(mountEsc, '/'); i >= 0 {
		mountEsc, rest = mountEsc[:i], mountEsc[i:]
	}
	m, err := url.PathUnescape(mountEsc)
	if err != nil {
		writeReason(lw, http.StatusBadRequest, ReasonBadPath, "bad path", nil)
		return
	}
	rt := (*f.routes.Load())[m]
	skillMD := (rest == "" || rest == "/") && rt != nil && rt.SkillMD != nil
	if rt != nil && rt.Mode == ModeStarting && !skillMD {
		rt = f.awaitStart(r.Context(), m)
	}
	if rt == nil {
		writeReason(lw, http.StatusNotFound, ReasonUnknownMount, "no skill is mounted here", nil)
		return
	}
	mount = rt.Mount

	if (rest == "" || rest == "/") && rt.SkillMD != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		h := lw.Header()
		h.Set("Content-Type", "text/markdown; charset=utf-8")
		h.Set("X-Warden-Discovery", "skill-md")
		h.Set("X-Omac-Discovery", "skill-md")
		h.Set("Content-Length", strconv.Itoa(len(rt.SkillMD)))
		setSafetyHeaders(h)
		lw.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = lw.Write(rt.SkillMD)
		}
		return
	}

	switch rt.Mode {
	case ModePending:
		writeReason(lw, http.StatusConflict, ReasonPendingCredentials, rt.message("the skill is waiting for credentials"),
			map[string]any{"mount": rt.Mount, "missing": rt.Missing})
		return
	case ModeBroken:
		writeReason(lw, http.StatusBadGateway, ReasonSkillBroken, rt.message("the skill is broken"), map[string]any{"mount": rt.Mount})
		return
	case ModeDown:
		writeReason(lw, http.StatusServiceUnavailable, ReasonSidecarDown, rt.message("the skill's sidecar is not running"), map[string]any{"mount": rt.Mount})
		return
	case ModeStarting:
		writeReason(lw, http.StatusServiceUnavailable, ReasonSidecarDown, rt.message("the skill's sidecar is still starting"), map[string]any{"mount": rt.Mount})
		return
	case ModeProxy:
	}

	limit := rt.MaxBody
	if limit <= 0 {
		limit = f.cfg.MaxBody
	}
	if r.ContentLength > limit {
		writeReason(lw, http.StatusRequestEntityTooLarge, ReasonBodyTooLarge, "request body too large", nil)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		body = &countBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit)}
		r.Body = body
	}
	if rest == "" {
		rest = "/"
	}
	up, err := url.PathUnescape(rest)
	if err != nil {
		writeReason(lw, http.StatusBadRequest, ReasonBadPath, "bad path", nil)
		return
	}
	// The handler owns r; the proxy clones it before Rewrite.
	r.URL.Path, r.URL.RawPath = up, rest
	rt.proxy.ServeHTTP(lw, r)
}

func (f *Facade) tokenOK(r *http.Request) bool {
	if len(f.token) == 0 {
		return false
	}
	a := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(a) <= len(scheme) || !strings.EqualFold(a[:len(scheme)], scheme) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(a[len(scheme):])), f.token) == 1
}

// SkillStatus is one entry of Status.Skills.
type SkillStatus struct {
	Name  string `json:"name"`
	Mount string `json:"mount"`
	State string `json:"state"`
	Base  string `json:"base"`
}

// Status is the body of GET /.
type Status struct {
	Version string        `json:"version"`
	Skills  []SkillStatus `json:"skills"`
}

func (f *Facade) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeReason(w, http.StatusMethodNotAllowed, "method-not-allowed", "only GET", nil)
		return
	}
	st := Status{Version: f.cfg.Version, Skills: []SkillStatus{}}
	for _, rt := range *f.routes.Load() {
		st.Skills = append(st.Skills, SkillStatus{Name: rt.Name, Mount: rt.Mount, State: rt.Mode.String(), Base: "/" + rt.Mount + "/"})
	}
	slices.SortFunc(st.Skills, func(a, b SkillStatus) int { return strings.Compare(a.Mount, b.Mount) })
	b, _ := json.Marshal(st)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	setSafetyHeaders(h)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

func setSafetyHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// writeReason writes a facade-generated error: reason headers plus a JSON
// body made of user-safe text only.
func writeReason(w http.ResponseWriter, code int, reason, msg string, extra map[string]any) {
	body := map[string]any{"error": reason, "message": msg}
	maps.Copy(body, extra)
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Warden-Reason", reason)
	h.Set("X-Omac-Reason", reason)
	h.Del("Content-Length")
	setSafetyHeaders(h)
	if lw, ok := w.(*logWriter); ok {
		lw.reason = reason
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// cleanPath collapses repeated slashes and refuses dot segments (also
// percent-encoded ones), so a mount cannot be escaped by the sidecar's own
// path cleaning.
func cleanPath(p string) (string, bool) {
	if p == "" || p[0] != '/' {
		return "", false
	}
	if strings.Contains(p, "//") {
		var b strings.Builder
		b.Grow(len(p))
		for i := 0; i < len(p); i++ {
			if p[i] == '/' && i > 0 && p[i-1] == '/' {
				continue
			}
			b.WriteByte(p[i])
		}
		p = b.String()
	}
	if strings.Contains(p, ".") || strings.Contains(p, "%") {
		for seg := range strings.SplitSeq(p[1:], "/") {
			if s, err := url.PathUnescape(seg); err != nil || s == "." || s == ".." {
				return "", false
			}
		}
	}
	return p, true
}
