package egress

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// hopHeaders are removed in both directions (RFC 9110 7.6.1), plus the
// proxy credentials.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHop strips hop-by-hop headers and the ones Connection names. It
// returns the requested upgrade protocol if the message asked for one.
func removeHop(h http.Header) string {
	var up string
	if httpguts.HeaderValuesContainsToken(h["Connection"], "upgrade") {
		up = h.Get("Upgrade")
	}
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = strings.TrimSpace(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	return up
}

func validHeaders(h http.Header) bool {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// requestPath returns the decoded path used for rule matching. Paths with
// dot segments, backslashes, control bytes, or encodings left over after
// one round of decoding are refused, so that no upstream normalisation can
// turn an allowed path into another one.
func requestPath(u *url.URL) (string, bool) {
	p := u.Path
	if p == "" {
		if u.Opaque != "" {
			return "", false
		}
		return "/", true
	}
	if p[0] != '/' {
		return "", false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "", false
		}
	}
	lp := strings.ToLower(p)
	if strings.Contains(lp, "%2e") || strings.Contains(lp, "%2f") || strings.Contains(lp, "%5c") || strings.Contains(lp, "%25") {
		return "", false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." {
			return "", false
		}
	}
	return p, true
}

// serveHTTP serves forward-proxy requests and CONNECT on one client
// connection, deciding every request separately.
func (p *Proxy) serveHTTP(c net.Conn, br *bufio.Reader) {
	first := true
	for {
		if !first {
			_ = c.SetReadDeadline(time.Now().Add(idleTimeout))
		}
		first = false
		block, err := peekHeader(br)
		if errors.Is(err, errHeaderTooLarge) {
			_ = writeDeny(c, http.StatusRequestHeaderFieldsTooLarge, "request", "", 0, Verdict{Reason: ReasonInvalidRequest}, false)
			return
		}
		if err != nil {
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
		// http.ReadRequest drops the Host header; keep it so that it can
		// be checked against the request target.
		hosts, herr := headerHosts(block)
		req, err := http.ReadRequest(br)
		if err != nil || herr != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			p.log.Debug("bad proxy request", "err", err, "header_err", herr)
			_ = writeDeny(c, http.StatusBadRequest, "malformed request", "", 0, Verdict{Reason: ReasonInvalidRequest}, false)
			return
		}
		if hosts != nil {
			req.Header["Host"] = hosts
		}
		_ = c.SetReadDeadline(time.Time{})
		if !validHeaders(req.Header) {
			_ = writeDeny(c, http.StatusBadRequest, "request with invalid headers", "", 0, Verdict{Reason: ReasonInvalidRequest}, false)
			return
		}
		if !p.authorized(req.Header) {
			p.record(kindOf(req), "", 0, req.Method, "", Verdict{Reason: ReasonAuth})
			keep := req.ContentLength == 0 && !req.Close && req.Method != http.MethodConnect
			_ = writeDeny(c, http.StatusProxyAuthRequired, "request without the session token", "", 0, Verdict{Reason: ReasonAuth}, keep)
			if !keep {
				return
			}
			continue
		}
		if req.Method == http.MethodConnect {
			p.handleConnect(c, br, req)
			return
		}
		if !p.handleForward(c, req) {
			return
		}
	}
}

var errHeaderTooLarge = errors.New("egress: request header too large")

// peekHeader returns the buffered request header block (through the blank
// line) without consuming it. The reader's size bounds the header.
func peekHeader(br *bufio.Reader) ([]byte, error) {
	n, scanned := max(br.Buffered(), 1), 0
	for {
		_, err := br.Peek(n)
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b[max(scanned-2, 0):], []byte("\n\r\n")); i >= 0 {
			return b[:max(scanned-2, 0)+i+3], nil
		}
		if i := bytes.Index(b[max(scanned-1, 0):], []byte("\n\n")); i >= 0 {
			return b[:max(scanned-1, 0)+i+2], nil
		}
		scanned = len(b)
		if errors.Is(err, bufio.ErrBufferFull) || len(b) >= br.Size() {
			return nil, errHeaderTooLarge
		}
		if err != nil {
			return nil, err
		}
		n = min(br.Buffered()+1, br.Size())
	}
}

// headerHosts parses a header block as net/http does and returns its Host
// values.
func headerHosts(block []byte) ([]string, error) {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(block)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	return h["Host"], nil
}

func kindOf(r *http.Request) string {
	if r.Method == http.MethodConnect {
		return "connect"
	}
	return "http"
}

// handleForward proxies one absolute-URI http:// request. It reports
// whether the client connection may be reused.
func (p *Proxy) handleForward(c net.Conn, req *http.Request) bool {
	ctx := p.ctx
	keep := !req.Close
	deny := func(status int, host string, port int, v Verdict) bool {
		// An unread body would be parsed as the next request.
		k := keep && (req.ContentLength == 0)
		_ = writeDeny(c, status, req.Method+" "+hostPort(host, port), host, port, v, k)
		return k
	}
	if req.URL.Scheme != "http" || req.URL.Host == "" || req.URL.User != nil {
		return deny(http.StatusBadRequest, "", 0, Verdict{Reason: ReasonInvalidRequest})
	}
	host, port, err := ParseAuthority(req.URL.Host, 80)
	if err != nil {
		p.record("http", "", 0, req.Method, "", Verdict{Reason: ReasonInvalidHost})
		return deny(http.StatusForbidden, "", 0, Verdict{Reason: ReasonInvalidHost})
	}
	hh := req.Header.Values("Host")
	switch {
	case len(hh) == 1:
		h2, p2, err := ParseAuthority(hh[0], 80)
		if err != nil || h2 != host || p2 != port {
			v := Verdict{Reason: ReasonHostMismatch}
			p.record("http", host, port, req.Method, "", v)
			return deny(http.StatusForbidden, host, port, v)
		}
	case len(hh) > 1 || req.ProtoAtLeast(1, 1):
		return deny(http.StatusBadRequest, host, port, Verdict{Reason: ReasonInvalidRequest})
	}
	path, ok := requestPath(req.URL)
	if !ok {
		v := Verdict{Reason: ReasonPathNotAllowed}
		p.record("http", host, port, req.Method, "", v)
		return deny(http.StatusForbidden, host, port, v)
	}
	v := p.decide(ctx, "http", req.Method, host, port, path)
	if !v.Allowed {
		return deny(http.StatusForbidden, host, port, v)
	}
	if cv := p.credentialScope(host, req.URL, req.Header); cv.Reason != "" {
		p.record("http", host, port, req.Method, path, cv)
		return deny(http.StatusForbidden, host, port, cv)
	}

	if httpguts.HeaderValuesContainsToken(req.Header["Expect"], "100-continue") && req.ContentLength != 0 {
		// Answer the expectation here: the upstream Transport sends the
		// body without waiting.
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	out := req.Clone(ctx)
	out.Header.Del("Expect")
	out.RequestURI = ""
	out.Close = false
	out.URL.Host = hostPort(host, port)
	if port == 80 {
		out.URL.Host = host
		if strings.Contains(host, ":") {
			out.URL.Host = "[" + host + "]"
		}
	}
	out.Host = ""
	out.Header.Del("Host")
	up := removeHop(out.Header)
	if up != "" {
		if !strings.EqualFold(up, "websocket") {
			v := Verdict{Reason: ReasonUpgrade}
			p.record("http", host, port, req.Method, path, v)
			return deny(http.StatusForbidden, host, port, v)
		}
		out.Header.Set("Connection", "Upgrade")
		out.Header.Set("Upgrade", up)
	}
	if req.ContentLength == 0 {
		out.Body = nil
	} else {
		// The Transport closes the body it sends; keep ours open so that
		// any unread rest can be drained before the next request.
		out.Body = io.NopCloser(req.Body)
	}
	resp, err := p.upTrans.RoundTrip(out)
	if err != nil {
		if de, ok := errors.AsType[*DenyError](err); ok {
			return deny(http.StatusForbidden, host, port, Verdict{Reason: de.Reason, Rule: de.Rule})
		}
		p.log.InfoContext(req.Context(), "upstream request failed", "host", host, "port", port, "err", err)
		_ = writeDeny(c, http.StatusBadGateway, req.Method+" "+hostPort(host, port), host, port, Verdict{Reason: ReasonUpstream}, false)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return p.spliceUpgrade(c, resp)
	}
	removeHop(resp.Header)
	if !keep {
		resp.Close = true
	}
	if err := resp.Write(c); err != nil {
		return false
	}
	if resp.Close {
		return false
	}
	// Drain what the upstream did not read so the next request parses.
	n, err := io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
	return err == nil && n < 1<<20
}

// spliceUpgrade relays a 101 response and then the upgraded stream.
func (p *Proxy) spliceUpgrade(c net.Conn, resp *http.Response) bool {
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		return false
	}
	up := resp.Header.Get("Upgrade")
	removeHop(resp.Header)
	resp.Header.Set("Connection", "Upgrade")
	resp.Header.Set("Upgrade", up)
	resp.Body = nil
	if err := resp.Write(c); err != nil {
		return false
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(rwc, c)
		rwc.Close()
		close(done)
	}()
	_, _ = io.Copy(c, rwc)
	c.Close()
	<-done
	return false
}

// credentialScope refuses requests to a host that carry another host's
// credential placeholder anywhere in the URL or headers.
func (p *Proxy) credentialScope(host string, u *url.URL, h http.Header) Verdict {
	if len(p.cfg.Credentials) == 0 {
		return Verdict{}
	}
	raw := u.String()
	dec, _ := url.PathUnescape(raw)
	dec2, _ := url.QueryUnescape(raw)
	for ch, cs := range p.creds {
		if ch == host {
			continue
		}
		for _, cr := range cs {
			ph := cr.Placeholder
			if ph == "" {
				continue
			}
			hit := strings.Contains(raw, ph) || strings.Contains(dec, ph) || strings.Contains(dec2, ph)
			for k, vs := range h {
				if hit {
					break
				}
				hit = strings.Contains(k, ph)
				for _, v := range vs {
					hit = hit || strings.Contains(v, ph)
				}
			}
			if hit {
				return Verdict{Reason: ReasonCredentialScope, Rule: "credential:" + ch}
			}
		}
	}
	return Verdict{}
}

// handleConnect serves a CONNECT tunnel, intercepting it when rules or
// credentials govern the host.
func (p *Proxy) handleConnect(c net.Conn, br *bufio.Reader, req *http.Request) {
	ctx := p.ctx
	host, port, err := ParseAuthority(req.RequestURI, 0)
	if err != nil {
		v := Verdict{Reason: ReasonInvalidHost}
		p.record("connect", "", 0, "", "", v)
		_ = writeDeny(c, http.StatusForbidden, "CONNECT", "", 0, v, false)
		return
	}
	what := "CONNECT " + hostPort(host, port)
	v := p.decide(ctx, "connect", "", host, port, "")
	if !v.Allowed {
		_ = writeDeny(c, http.StatusForbidden, what, host, port, v, false)
		return
	}
	client := &bufConn{Conn: c, r: br}
	if v.Inspect || len(p.creds[host]) > 0 {
		if p.cfg.CA == nil || !p.cfg.CA.Permits(host) {
			v := Verdict{Rule: v.Rule, Reason: ReasonNoInspection}
			p.record("connect", host, port, "", "", v)
			_ = writeDeny(c, http.StatusForbidden, what, host, port, v, false)
			return
		}
		if _, err := p.resolveChecked(ctx, host, port); err != nil {
			if de, ok := errors.AsType[*DenyError](err); ok {
				p.record("connect", host, port, "", "", Verdict{Reason: de.Reason, Rule: de.Rule})
			}
			p.connectDialError(c, what, host, port, err)
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		p.intercept(ctx, client, host, port)
		return
	}
	upc, err := p.dialChecked(ctx, "connect", host, port)
	if err != nil {
		p.connectDialError(c, what, host, port, err)
		return
	}
	defer upc.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	splice(client, upc)
}

func (p *Proxy) connectDialError(c net.Conn, what, host string, port int, err error) {
	if de, ok := errors.AsType[*DenyError](err); ok {
		_ = writeDeny(c, http.StatusForbidden, what, host, port, Verdict{Reason: de.Reason, Rule: de.Rule}, false)
		return
	}
	p.log.Info("upstream dial failed", "host", host, "port", port, "err", err)
	_ = writeDeny(c, http.StatusBadGateway, what, host, port, Verdict{Reason: ReasonUpstream}, false)
}

// bufConn reads through a buffered reader that may hold bytes the client
// sent before the tunnel was established.
type bufConn struct {
	net.Conn
	r io.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *bufConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
