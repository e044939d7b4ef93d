package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHTTP(t *testing.T) {
	srv := httptest.NewServer(newHandler("tok-123", "hi"))
	defer srv.Close()
	get := func(path string) map[string]any {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get("/status"); v["ok"] != true || v["greeting"] != "hi" {
		t.Fatalf("/status = %v", v)
	}
	v := get("/whoami")
	if v["fingerprint"] != fingerprint("tok-123") || len(v["fingerprint"].(string)) != 12 {
		t.Fatalf("/whoami = %v", v)
	}
	resp, err := http.Post(srv.URL+"/echo", "text/plain", strings.NewReader("hello there"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello there" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("/echo = %q (%s)", b, resp.Header.Get("Content-Type"))
	}
	for _, path := range []string{"/status", "/whoami", "/echo"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "tok-123") {
			t.Fatalf("%s leaked the token", path)
		}
	}
}

func TestTick(t *testing.T) {
	srv := httptest.NewServer(newHandler("", "hello"))
	defer srv.Close()
	start := time.Now()
	resp, err := http.Get(srv.URL + "/tick?n=3")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []time.Duration
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events = append(events, time.Since(start))
		}
	}
	if len(events) != 3 {
		t.Fatalf("got %d events, want 3", len(events))
	}
	// The first event arrives at once (flushed), the last after ~200 ms.
	if events[0] > 90*time.Millisecond || events[2] < 180*time.Millisecond {
		t.Fatalf("event times %v", events)
	}
	r, err := http.Get(srv.URL + "/tick?n=1000")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusBadRequest {
		t.Fatalf("n=1000 status %d", r.StatusCode)
	}
}

func wsDial(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	k := base64.StdEncoding.EncodeToString(key)
	req := "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: " + k + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // a 101 response has no body; the connection stays open
	// RFC 6455 section 1.3 example: key "dGhlIHNhbXBsZSBub25jZQ==" gives
	// "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="; here we check against our own key.
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") == "" {
		t.Fatalf("handshake: %s %v", resp.Status, resp.Header)
	}
	return conn, br
}

// clientFrame builds a masked client frame.
func clientFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, 0x80|byte(n))
	case n <= 0xFFFF:
		out = append(out, 0x80|126, byte(n>>8), byte(n))
	default:
		out = append(out, 0x80|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	mask := []byte{1, 2, 3, 4}
	out = append(out, mask...)
	for i, c := range payload {
		out = append(out, c^mask[i%4])
	}
	return out
}

func serverFrame(t *testing.T, br *bufio.Reader) (byte, []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatal(err)
	}
	if h[1]&0x80 != 0 {
		t.Fatal("server frame is masked")
	}
	n := int(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		_, _ = io.ReadFull(br, b[:])
		n = int(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		_, _ = io.ReadFull(br, b[:])
		n = int(binary.BigEndian.Uint64(b[:]))
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		t.Fatal(err)
	}
	return h[0] & 0x0F, p
}

func TestWebSocket(t *testing.T) {
	srv := httptest.NewServer(newHandler("", "hello"))
	defer srv.Close()
	conn, br := wsDial(t, srv.URL)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))

	big := strings.Repeat("x", 70000)
	for _, msg := range []string{"hello", strings.Repeat("y", 300), big} {
		if _, err := conn.Write(clientFrame(true, opText, []byte(msg))); err != nil {
			t.Fatal(err)
		}
		op, p := serverFrame(t, br)
		if op != opText || string(p) != msg {
			t.Fatalf("echo of %d bytes: op %d, %d bytes", len(msg), op, len(p))
		}
	}
	// A fragmented binary message with a ping in the middle.
	_, _ = conn.Write(clientFrame(false, opBinary, []byte("ab")))
	_, _ = conn.Write(clientFrame(true, opPing, []byte("p")))
	_, _ = conn.Write(clientFrame(true, opContinuation, []byte("cd")))
	if op, p := serverFrame(t, br); op != opPong || string(p) != "p" {
		t.Fatalf("pong: op %d %q", op, p)
	}
	if op, p := serverFrame(t, br); op != opBinary || string(p) != "abcd" {
		t.Fatalf("fragmented echo: op %d %q", op, p)
	}
	// Closing handshake.
	_, _ = conn.Write(clientFrame(true, opClose, []byte{0x03, 0xE8}))
	if op, p := serverFrame(t, br); op != opClose || binary.BigEndian.Uint16(p) != 1000 {
		t.Fatalf("close: op %d %v", op, p)
	}
}

func TestWebSocketRejects(t *testing.T) {
	srv := httptest.NewServer(newHandler("", "hello"))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain GET /ws = %d", resp.StatusCode)
	}
	// Unmasked client frames are a protocol error.
	conn, br := wsDial(t, srv.URL)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = conn.Write([]byte{0x81, 0x01, 'x'})
	if op, p := serverFrame(t, br); op != opClose || binary.BigEndian.Uint16(p) != 1002 {
		t.Fatalf("unmasked frame: op %d %v", op, p)
	}
}

func TestAcceptKey(t *testing.T) {
	// The worked example from RFC 6455 section 1.3.
	srv := httptest.NewServer(newHandler("", "hello"))
	defer srv.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("Sec-WebSocket-Accept = %q", got)
	}
}
