package facade

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Mode says how a route answers.
type Mode int

const (
	// ModeProxy forwards to Route.Upstream.
	ModeProxy Mode = iota
	// ModePending answers 409 pending-credentials naming Route.Missing.
	ModePending
	// ModeBroken answers 502 skill-broken.
	ModeBroken
	// ModeDown answers 503 sidecar-down (for example while restarting).
	ModeDown
	// ModeStarting holds requests until the route changes (the sidecar
	// came up, or failed) or Config.StartWait passes (then 503
	// sidecar-down), so a session need not wait for its sidecars before
	// the sandbox starts.
	ModeStarting
)

func (m Mode) String() string {
	switch m {
	case ModeProxy:
		return "running"
	case ModePending:
		return ReasonPendingCredentials
	case ModeBroken:
		return "broken"
	case ModeDown:
		return "down"
	case ModeStarting:
		return "starting"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Route mounts one skill at "/<Mount>/".
type Route struct {
	// Mount is the first path segment: letters, digits, '.', '_' or '-',
	// at most 64 bytes, not "." or "..".
	Mount string
	// Name is the skill name shown by GET /; empty means Mount.
	Name string
	Mode Mode
	// Upstream is the sidecar's base URL, e.g. "http://127.0.0.1:4711",
	// or "unix:/abs/path.sock" for a sidecar reached over a Unix socket
	// (ModeProxy only). A path in it is prepended to the forwarded path.
	Upstream string
	// SkillMD, if non-nil, is served for GET /<Mount> and /<Mount>/.
	SkillMD []byte
	// MaxBody overrides Config.MaxBody for this route when > 0.
	MaxBody int64
	// Timeout overrides Config.ResponseHeaderTimeout when > 0.
	Timeout time.Duration
	// Missing names the secrets a ModePending route waits for. Names
	// only: values must never be put here.
	Missing []string
	// Message is optional user-safe text for stub responses.
	Message string
	// Header is set on every forwarded request after the client's
	// Authorization and X-Forwarded-* headers are removed, so it is the
	// place for credentials the facade injects.
	Header http.Header
}

type route struct {
	Route
	target *url.URL
	prefix []string // X-Forwarded-Prefix value: "/" + Mount
	tr     *http.Transport
	proxy  *httputil.ReverseProxy
}

func (rt *route) message(def string) string {
	if rt.Message != "" {
		return rt.Message
	}
	return def
}

// ValidMount reports whether m can be used as Route.Mount.
func ValidMount(m string) bool {
	if m == "" || len(m) > 64 || m == "." || m == ".." {
		return false
	}
	for _, c := range []byte(m) {
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// SetRoute adds or atomically replaces the route for r.Mount. In-flight
// requests finish on the route they started with. The pooled transport is
// kept when the upstream and timeout are unchanged.
func (f *Facade) SetRoute(r Route) error {
	if !ValidMount(r.Mount) {
		return fmt.Errorf("%w: %q", ErrInvalidMount, r.Mount)
	}
	if r.Name == "" {
		r.Name = r.Mount
	}
	r.Missing = slices.Clone(r.Missing)
	r.SkillMD = slices.Clone(r.SkillMD)
	r.Header = r.Header.Clone()
	nr := &route{Route: r, prefix: []string{"/" + r.Mount}}
	var socket string
	if r.Mode == ModeProxy {
		if p, ok := strings.CutPrefix(r.Upstream, "unix:"); ok {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("facade: route %s: invalid upstream socket", r.Mount)
			}
			socket = p
			nr.target = &url.URL{Scheme: "http", Host: "sidecar"}
		} else {
			u, err := url.Parse(r.Upstream)
			if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil {
				return fmt.Errorf("facade: route %s: invalid upstream", r.Mount)
			}
			nr.target = u
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	old := (*f.routes.Load())[r.Mount]
	if nr.target != nil {
		if old != nil && old.tr != nil && old.Upstream == r.Upstream && old.Timeout == r.Timeout {
			nr.tr = old.tr
		} else {
			nr.tr = f.newTransport(r.Timeout, socket)
		}
		nr.proxy = &httputil.ReverseProxy{
			Rewrite:   nr.rewrite,
			Transport: nr.tr,
			// FlushInterval 0: ReverseProxy itself flushes after every
			// write for text/event-stream and for responses of unknown
			// length (chunked streams), so SSE frames and other streams go
			// out as they arrive. Responses with a Content-Length are
			// buffered and leave in as few writes as possible; -1 here
			// would flush the headers and every body write separately
			// (and start a timer goroutine per request).
			FlushInterval: 0,
			BufferPool:    copyBufs,
			ErrorHandler:  f.proxyError,
			ErrorLog:      slog.NewLogLogger(f.log.Handler(), slog.LevelDebug),
		}
	}
	if old != nil && old.tr != nil && old.tr != nr.tr {
		old.tr.CloseIdleConnections()
	}
	tbl := maps.Clone(*f.routes.Load())
	tbl[r.Mount] = nr
	f.routes.Store(&tbl)
	f.notifyLocked()
	return nil
}

// RemoveRoute removes the route for mount; later requests get 404
// unknown-mount. It reports whether a route existed.
func (f *Facade) RemoveRoute(mount string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := (*f.routes.Load())[mount]
	if !ok {
		return false
	}
	tbl := maps.Clone(*f.routes.Load())
	delete(tbl, mount)
	f.routes.Store(&tbl)
	f.notifyLocked()
	if old.tr != nil {
		old.tr.CloseIdleConnections()
	}
	return true
}

// Routes returns a snapshot of the route table sorted by mount.
func (f *Facade) Routes() []Route {
	var rs []Route
	for _, rt := range *f.routes.Load() {
		rs = append(rs, rt.Route)
	}
	slices.SortFunc(rs, func(a, b Route) int { return strings.Compare(a.Mount, b.Mount) })
	return rs
}

// copyBufs recycles ReverseProxy's body copy buffers, which it would
// otherwise allocate (32 KiB) for every request.
var copyBufs httputil.BufferPool = bufPool{}

const copyBufSize = 32 << 10

var bufs = sync.Pool{New: func() any { return new([copyBufSize]byte) }}

type bufPool struct{}

func (bufPool) Get() []byte { return bufs.Get().(*[copyBufSize]byte)[:] }

func (bufPool) Put(b []byte) {
	if cap(b) == copyBufSize {
		bufs.Put((*[copyBufSize]byte)(b[:copyBufSize]))
	}
}

// newTransport is a route's pooled transport; with socket, every
// connection goes to that Unix socket (a relay into a sidecar's sandbox).
func (f *Facade) newTransport(timeout time.Duration, socket string) *http.Transport {
	if timeout <= 0 {
		timeout = f.cfg.ResponseHeaderTimeout
	}
	d := &net.Dialer{Timeout: f.cfg.DialTimeout, KeepAlive: 30 * time.Second}
	dial := d.DialContext
	if socket != "" {
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", socket) }
	}
	return &http.Transport{
		Proxy:                 nil, // never HTTP(S)_PROXY: sidecars are loopback
		DialContext:           dial,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true, // pass encodings through untouched
		ForceAttemptHTTP2:     false,
	}
}

func (rt *route) rewrite(pr *httputil.ProxyRequest) {
	h := pr.Out.Header
	h.Del("Authorization")
	h.Del("Forwarded")
	for k := range h {
		if len(k) >= len("X-Forwarded-") && strings.EqualFold(k[:len("X-Forwarded-")], "X-Forwarded-") {
			delete(h, k)
		}
	}
	pr.SetURL(rt.target)
	h["X-Forwarded-Prefix"] = rt.prefix
	for k, v := range rt.Header {
		h[k] = slices.Clone(v)
	}
}

// proxyError maps transport errors to reason responses. Only user-safe
// text goes into the body; the cause goes to the log.
func (f *Facade) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	var code int
	var reason, msg string
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		code, reason, msg = http.StatusRequestEntityTooLarge, ReasonBodyTooLarge, "request body too large"
	case errors.Is(err, syscall.ECONNREFUSED):
		code, reason, msg = http.StatusServiceUnavailable, ReasonSidecarDown, "the skill's sidecar is not running"
	case r.Context().Err() != nil && !errors.Is(err, context.DeadlineExceeded):
		// The client went away; nobody reads a response.
		if lw, ok := w.(*logWriter); ok {
			lw.reason = "client-gone"
		}
		f.log.DebugContext(r.Context(), "upstream request canceled", "err", err)
		return
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		code, reason, msg = http.StatusGatewayTimeout, ReasonTimeout, "the skill's sidecar did not answer in time"
	default:
		code, reason, msg = http.StatusBadGateway, ReasonUpstreamError, "the skill's sidecar failed"
	}
	f.log.WarnContext(r.Context(), "upstream error", "reason", reason, "err", err)
	writeReason(w, code, reason, msg, nil)
}

// notifyLocked wakes requests waiting for a starting route; f.mu is held.
func (f *Facade) notifyLocked() {
	close(*f.changed.Load())
	ch := make(chan struct{})
	f.changed.Store(&ch)
}

// awaitStart waits while mount's route is starting: until it changes,
// StartWait passes or the request ends. It returns the route then.
func (f *Facade) awaitStart(ctx context.Context, mount string) *route {
	timer := time.NewTimer(f.cfg.StartWait)
	defer timer.Stop()
	for {
		ch := *f.changed.Load() // before the route: no missed wake-up
		rt := (*f.routes.Load())[mount]
		if rt == nil || rt.Mode != ModeStarting {
			return rt
		}
		select {
		case <-ch:
		case <-timer.C:
			return rt
		case <-ctx.Done():
			return rt
		}
	}
}
