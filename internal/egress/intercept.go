package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

var errSNIMismatch = errors.New("egress: TLS server name does not match the tunnel host")

// intercept terminates the tunnel (TLS with a leaf from the CA, or plain
// HTTP) and decides every request inside it by method and path before
// forwarding it upstream over a verified, address-checked connection.
func (p *Proxy) intercept(ctx context.Context, c net.Conn, host string, port int) {
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(c)
	b, err := br.Peek(1)
	if err != nil {
		return
	}
	var conn net.Conn = &bufConn{Conn: c, r: br}
	scheme, proto := "http", ""
	if b[0] == 0x16 { // TLS handshake record
		tc := tls.Server(conn, &tls.Config{
			MinVersion: tls.VersionTLS12,
			NextProtos: []string{"h2", "http/1.1"},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				if hello.ServerName != "" {
					if n, err := NormalizeHost(hello.ServerName); err != nil || n != host {
						p.record("mitm", host, port, "", "", Verdict{Reason: ReasonHostMismatch})
						return nil, errSNIMismatch
					}
				}
				return p.cfg.CA.Leaf(host)
			},
		})
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			p.log.DebugContext(ctx, "intercept handshake failed", "host", host, "err", err)
			return
		}
		conn, scheme, proto = tc, "https", tc.ConnectionState().NegotiatedProtocol
	}
	_ = c.SetReadDeadline(time.Time{})

	ih := &interceptHandler{p: p, host: host, port: port, scheme: scheme}
	errLog := slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)
	ih.rp = &httputil.ReverseProxy{
		Rewrite:      ih.rewrite,
		Transport:    p.upTrans,
		ErrorHandler: ih.upstreamError,
		ErrorLog:     errLog,
	}
	srv := &http.Server{
		Handler:           ih,
		ReadHeaderTimeout: handshakeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errLog,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if proto == "h2" {
		// x/net's ServeConn serves one already-negotiated TLS connection
		// with a per-connection context; net/http has no equivalent yet.
		h2s := &http2.Server{IdleTimeout: idleTimeout, MaxConcurrentStreams: 100}             //nolint:staticcheck // SA1019: see above
		h2s.ServeConn(conn, &http2.ServeConnOpts{Context: ctx, BaseConfig: srv, Handler: ih}) //nolint:staticcheck // SA1019: see above
		ih.wg.Wait()
		return
	}
	l := newOneConnListener(conn)
	srv.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			l.finish()
		}
	}
	_ = srv.Serve(l)
	ih.wg.Wait()
	_ = srv.Close()
}

type interceptHandler struct {
	p      *Proxy
	host   string
	port   int
	scheme string
	rp     *httputil.ReverseProxy
	wg     sync.WaitGroup
}

func (ih *interceptHandler) authority() string {
	if (ih.scheme == "https" && ih.port == 443) || (ih.scheme == "http" && ih.port == 80) {
		if strings.Contains(ih.host, ":") {
			return "[" + ih.host + "]"
		}
		return ih.host
	}
	return hostPort(ih.host, ih.port)
}

func (ih *interceptHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ih.wg.Add(1)
	defer ih.wg.Done()
	p := ih.p
	what := r.Method + " " + ih.scheme + "://" + ih.authority()
	deny := func(v Verdict, path string) {
		p.record("mitm", ih.host, ih.port, r.Method, path, v)
		denyHTTP(w, http.StatusForbidden, what, ih.host, ih.port, v)
	}
	// The Host header (or :authority) must name the tunnel's host: no
	// domain fronting inside an allowed tunnel.
	for i, a := range []string{r.Host, r.URL.Host} {
		if i == 1 && a == "" {
			continue // origin-form request target
		}
		h, port, err := ParseAuthority(a, ih.port)
		if err != nil || h != ih.host || port != ih.port {
			deny(Verdict{Reason: ReasonHostMismatch}, "")
			return
		}
	}
	path, ok := requestPath(r.URL)
	if !ok {
		deny(Verdict{Reason: ReasonPathNotAllowed}, "")
		return
	}
	if r.Method == http.MethodConnect {
		deny(Verdict{Reason: ReasonMethodNotAllowed}, path)
		return
	}
	v := p.decide(r.Context(), "mitm", r.Method, ih.host, ih.port, path)
	if !v.Allowed {
		denyHTTP(w, http.StatusForbidden, what+path, ih.host, ih.port, v)
		return
	}
	if cv := p.credentialScope(ih.host, r.URL, r.Header); cv.Reason != "" {
		deny(cv, path)
		return
	}
	if httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") {
		if up := r.Header.Get("Upgrade"); !strings.EqualFold(up, "websocket") {
			deny(Verdict{Reason: ReasonUpgrade}, path)
			return
		}
	} else {
		r.Header.Del("Upgrade")
	}
	ih.rp.ServeHTTP(w, r)
}

func (ih *interceptHandler) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	out.URL.Scheme = ih.scheme
	out.URL.Host = ih.authority()
	out.Host = ""
	out.Header.Del("Proxy-Authorization")
	for _, cr := range ih.p.creds[ih.host] {
		val := cr.Value()
		hv := val
		switch {
		case cr.Basic:
			hv = "Basic " + base64.StdEncoding.EncodeToString([]byte(val))
		case strings.EqualFold(cr.Header, "Authorization"):
			hv = "Bearer " + val
		}
		if cr.Placeholder != "" {
			for k, vs := range out.Header {
				for i, v := range vs {
					if strings.Contains(v, cr.Placeholder) {
						out.Header[k][i] = strings.ReplaceAll(v, cr.Placeholder, val)
					}
				}
			}
			if strings.Contains(out.URL.RawQuery, cr.Placeholder) {
				out.URL.RawQuery = strings.ReplaceAll(out.URL.RawQuery, cr.Placeholder, url.QueryEscape(val))
			}
		}
		out.Header.Set(cr.Header, hv)
	}
}

func (ih *interceptHandler) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	what := r.Method + " " + ih.scheme + "://" + ih.authority()
	if de, ok := errors.AsType[*DenyError](err); ok {
		denyHTTP(w, http.StatusForbidden, what, ih.host, ih.port, Verdict{Reason: de.Reason, Rule: de.Rule})
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	ih.p.log.InfoContext(r.Context(), "intercepted upstream request failed", "host", ih.host, "port", ih.port, "err", err)
	w.Header().Set("X-Warden-Error", ReasonUpstream)
	http.Error(w, "warden: upstream "+strconv.Quote(ih.authority())+" unreachable", http.StatusBadGateway)
}

// oneConnListener hands one connection to http.Server.Serve, then blocks
// Accept until that connection is finished.
type oneConnListener struct {
	c    chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{c: make(chan net.Conn, 1), done: make(chan struct{}), addr: c.LocalAddr()}
	l.c <- c
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) finish()        { l.once.Do(func() { close(l.done) }) }
func (l *oneConnListener) Close() error   { l.finish(); return nil }
func (l *oneConnListener) Addr() net.Addr { return l.addr }
