// Command echo-sidecar is the sidecar of the example "echo" skill. It
// serves on 127.0.0.1:$SIDECAR_PORT and holds the secret $ECHO_TOKEN, which
// it never returns: /whoami reports only a fingerprint.
//
//	GET  /status  health, with the configured greeting
//	GET  /whoami  {"fingerprint": first 12 hex of sha256($ECHO_TOKEN)}
//	POST /echo    the request body, unchanged
//	GET  /tick    server-sent events: ?n= events (default 5), 100 ms apart
//	GET  /ws      WebSocket echo (RFC 6455, implemented with the stdlib)
//
// It uses only the standard library so it builds anywhere with `go build`.
package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	maxBody    = 1 << 20 // POST /echo and WebSocket messages
	maxTicks   = 100
	tickPeriod = 100 * time.Millisecond
)

func main() {
	port := os.Getenv("SIDECAR_PORT")
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		log.Printf("echo-sidecar: SIDECAR_PORT %q is not a port", port)
		os.Exit(2)
	}
	greeting := os.Getenv("ECHO_GREETING")
	if greeting == "" {
		greeting = "hello"
	}
	srv := &http.Server{
		Addr:              net.JoinHostPort("127.0.0.1", port),
		Handler:           newHandler(os.Getenv("ECHO_TOKEN"), greeting),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	// Keep the token out of the environment of anything we might start.
	os.Unsetenv("ECHO_TOKEN")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Printf("echo-sidecar: listening on %s", srv.Addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("echo-sidecar: %v", err)
		os.Exit(1)
	}
}

// fingerprint is the first 12 hex digits of the SHA-256 of a secret.
func fingerprint(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

func newHandler(token, greeting string) http.Handler {
	fp := ""
	if token != "" {
		fp = fingerprint(token)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"ok": true, "skill": "echo", "greeting": greeting})
	})
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"fingerprint": fp, "configured": fp != ""})
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		ct := r.Header.Get("Content-Type")
		if ct == "" {
			ct = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(body)
	})
	mux.HandleFunc("GET /tick", tick)
	mux.HandleFunc("GET /ws", websocketEcho)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// tick streams ?n= server-sent events, one every 100 ms, flushing each.
func tick(w http.ResponseWriter, r *http.Request) {
	n := 5
	if s := r.URL.Query().Get("n"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > maxTicks {
			http.Error(w, fmt.Sprintf("n must be 1 to %d", maxTicks), http.StatusBadRequest)
			return
		}
		n = v
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(tickPeriod)
	defer t.Stop()
	for i := 1; i <= n; i++ {
		if i > 1 {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: tick\ndata: {\"n\":%d,\"of\":%d}\n\n", i, i, n); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// WebSocket (RFC 6455) opcodes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// websocketEcho performs the RFC 6455 opening handshake and echoes every
// text or binary message back, answering pings and the closing handshake.
func websocketEcho(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		http.Error(w, "websocket upgrade required", http.StatusUpgradeRequired)
		return
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		http.Error(w, "unsupported websocket version", http.StatusUpgradeRequired)
		return
	}
	if k, err := base64.StdEncoding.DecodeString(key); err != nil || len(k) != 16 {
		http.Error(w, "bad Sec-WebSocket-Key", http.StatusBadRequest)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot hijack connection", http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Time{})
	sum := sha1.Sum([]byte(key + wsGUID))
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	if err := brw.Flush(); err != nil {
		return
	}
	_ = wsLoop(brw.Reader, brw.Writer, 5*time.Minute, conn)
}

type frame struct {
	fin     bool
	opcode  byte
	payload []byte
}

// wsLoop reads client frames and echoes messages until close or error.
func wsLoop(r *bufio.Reader, w *bufio.Writer, idle time.Duration, conn net.Conn) error {
	var (
		msg    []byte
		msgOp  byte
		inFrag bool
	)
	for {
		if conn != nil {
			_ = conn.SetReadDeadline(time.Now().Add(idle))
		}
		f, err := readFrame(r)
		if err != nil {
			code := uint16(1002) // protocol error
			if errors.Is(err, errTooBig) {
				code = 1009
			}
			if !errors.Is(err, io.EOF) {
				_ = writeClose(w, code)
			}
			return err
		}
		switch f.opcode {
		case opPing:
			if err := writeFrame(w, opPong, f.payload); err != nil {
				return err
			}
		case opPong:
		case opClose:
			code := uint16(1000)
			if len(f.payload) >= 2 {
				code = binary.BigEndian.Uint16(f.payload)
			}
			_ = writeClose(w, code)
			return nil
		case opText, opBinary:
			if inFrag {
				_ = writeClose(w, 1002)
				return errors.New("new message inside a fragmented one")
			}
			msg, msgOp, inFrag = append(msg[:0], f.payload...), f.opcode, !f.fin
		case opContinuation:
			if !inFrag {
				_ = writeClose(w, 1002)
				return errors.New("continuation without a message")
			}
			if len(msg)+len(f.payload) > maxBody {
				_ = writeClose(w, 1009)
				return errTooBig
			}
			msg, inFrag = append(msg, f.payload...), !f.fin
		default:
			_ = writeClose(w, 1002)
			return fmt.Errorf("unknown opcode %#x", f.opcode)
		}
		if (f.opcode == opText || f.opcode == opBinary || f.opcode == opContinuation) && !inFrag {
			if err := writeFrame(w, msgOp, msg); err != nil {
				return err
			}
		}
	}
}

var errTooBig = errors.New("message too big")

// readFrame reads one client frame; client frames must be masked.
func readFrame(r *bufio.Reader) (frame, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	f := frame{fin: h[0]&0x80 != 0, opcode: h[0] & 0x0F}
	if h[0]&0x70 != 0 {
		return frame{}, errors.New("reserved bits set")
	}
	if h[1]&0x80 == 0 {
		return frame{}, errors.New("unmasked client frame")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return frame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return frame{}, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if f.opcode >= opClose && (n > 125 || !f.fin) {
		return frame{}, errors.New("bad control frame")
	}
	if n > maxBody {
		return frame{}, errTooBig
	}
	var mask [4]byte
	if _, err := io.ReadFull(r, mask[:]); err != nil {
		return frame{}, err
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return frame{}, err
	}
	for i := range f.payload {
		f.payload[i] ^= mask[i%4]
	}
	return f, nil
}

// writeFrame writes one unmasked, unfragmented server frame.
func writeFrame(w *bufio.Writer, opcode byte, payload []byte) error {
	_ = w.WriteByte(0x80 | opcode)
	switch n := len(payload); {
	case n < 126:
		_ = w.WriteByte(byte(n))
	case n <= 0xFFFF:
		_ = w.WriteByte(126)
		_ = binary.Write(w, binary.BigEndian, uint16(n))
	default:
		_ = w.WriteByte(127)
		_ = binary.Write(w, binary.BigEndian, uint64(n))
	}
	_, _ = w.Write(payload)
	return w.Flush()
}

func writeClose(w *bufio.Writer, code uint16) error {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], code)
	return writeFrame(w, opClose, b[:])
}
