package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"127.1.2.3:8080", true},
		{"[::1]:0", true},
		{"localhost:0", true},
		{":0", false},
		{"0.0.0.0:0", false},
		{"[::]:0", false},
		{"192.168.1.10:80", false},
		{"example.com:80", false},
		{"127.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			if err := checkLoopback(tt.addr); (err == nil) != tt.ok {
				t.Errorf("checkLoopback(%q) = %v, want ok %v", tt.addr, err, tt.ok)
			}
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cert without key", []string{"-tls-cert", "c.pem"}, "together"},
		{"non-loopback", []string{"-listen", "0.0.0.0:80"}, "non-loopback"},
		{"extra args", []string{"x"}, "unexpected"},
		{"no key flag", []string{"-require-key", "s"}, "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseFlags(tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseFlags(%q) = %v, want error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestRun starts the binary's server, reads the address file, makes one
// request and shuts down.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	logFile := filepath.Join(dir, "log.jsonl")
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"steps":[{"command":"true"}],"final":"ok"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	logger := slog.New(slog.DiscardHandler)
	go func() {
		errc <- run(ctx, []string{"-addr-file", addrFile, "-log", logFile, "-script", script}, "the-key", logger)
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); {
		b, _ := os.ReadFile(addrFile)
		addr = string(b)
		time.Sleep(10 * time.Millisecond)
	}
	if addr == "" {
		t.Fatal("no address file")
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/v1/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer the-key")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `"/v1/models"`) || strings.Contains(string(log), "the-key") {
		t.Errorf("log %s", log)
	}
}
