package facade

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// logWriter records status and size for the access log. It keeps Flush and
// Hijack reachable (directly and via Unwrap for http.ResponseController),
// which SSE and WebSocket proxying need.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	reason string
	conn   *countConn // set once hijacked
}

func (w *logWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *logWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *logWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.status = http.StatusSwitchingProtocols
	w.conn = &countConn{Conn: c}
	return w.conn, brw, nil
}

func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type countConn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

type countBody struct {
	io.ReadCloser
	n int64
}

func (b *countBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// logRequest writes one access log line. Headers are never logged, so
// Authorization cannot leak; the path is left out because queries may
// carry secrets.
func (f *Facade) logRequest(r *http.Request, w *logWriter, mount string, body *countBody, start time.Time) {
	if !f.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	var in, out int64
	if body != nil {
		in = body.n
	}
	out = w.bytes
	if w.conn != nil {
		in += w.conn.in.Load()
		out += w.conn.out.Load()
	}
	status := w.status
	if status == 0 {
		status = 499 // nothing written: the client went away
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("mount", mount),
		slog.Int("status", status),
		slog.Int64("bytes_in", in),
		slog.Int64("bytes_out", out),
		slog.Duration("duration", time.Since(start)),
	}
	if w.reason != "" {
		attrs = append(attrs, slog.String("reason", w.reason))
	}
	f.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}
