// Command warden-mockmodel serves the scripted mock model of
// internal/mockmodel on a loopback address, for end-to-end tests and demos
// that drive real agent harnesses.
//
// Usage:
//
//	warden-mockmodel [-listen 127.0.0.1:0] [-script FILE] [-log FILE]
//	    [-addr-file FILE] [-tls-cert FILE -tls-key FILE] [-record-bodies]
//
// The key that model requests must present, if any, is read from the
// MOCKMODEL_REQUIRE_KEY environment variable; it is a secret, so there is
// no flag for it.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/fsutil"

	"github.com/wardenhq/warden/internal/mockmodel"
)

// requireKeyEnv names the environment variable holding Options.RequireKey.
const requireKeyEnv = "MOCKMODEL_REQUIRE_KEY"

// shutdownTimeout bounds how long in-flight responses may take at exit.
const shutdownTimeout = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	err := run(ctx, os.Args[1:], os.Getenv(requireKeyEnv), logger)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		logger.ErrorContext(ctx, "warden-mockmodel failed", "err", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	listen       string
	tlsCert      string
	tlsKey       string
	script       string
	log          string
	addrFile     string
	recordBodies bool
	selfSigned   string
	caOut        string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("warden-mockmodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:0", "loopback `address` to listen on")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve HTTPS with this certificate `file` (needs -tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "private key `file` for -tls-cert")
	fs.StringVar(&c.script, "script", "", "JSON script `file` (default: the built-in demo script)")
	fs.StringVar(&c.log, "log", "", "append one JSON line per request to `file`")
	fs.StringVar(&c.addrFile, "addr-file", "", "write the actual listen address to `file` once listening")
	fs.BoolVar(&c.recordBodies, "record-bodies", false, "include request bodies in the log")
	fs.StringVar(&c.selfSigned, "self-signed", "", "serve HTTPS as host `NAME` with a throw-away CA (needs -ca-out)")
	fs.StringVar(&c.caOut, "ca-out", "", "write the throw-away CA certificate (PEM) to `file`")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return config{}, errors.New("-tls-cert and -tls-key must be given together")
	}
	if (c.selfSigned == "") != (c.caOut == "") || (c.selfSigned != "" && c.tlsCert != "") {
		return config{}, errors.New("-self-signed needs -ca-out, and excludes -tls-cert")
	}
	if err := checkLoopback(c.listen); err != nil {
		return config{}, err
	}
	return c, nil
}

// run serves until ctx is done.
func run(ctx context.Context, args []string, requireKey string, logger *slog.Logger) error {
	c, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	script, err := loadScript(c.script)
	if err != nil {
		return err
	}
	opts := mockmodel.Options{Script: script, RequireKey: requireKey, RecordBodies: c.recordBodies}
	if c.log != "" {
		f, err := os.OpenFile(c.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		defer f.Close()
		opts.Log = f
	}
	srv := &http.Server{
		Handler:           mockmodel.New(opts),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if c.selfSigned != "" {
		caPEM, cert, err := mockmodel.SelfSigned(c.selfSigned)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(c.caOut, string(caPEM)); err != nil {
			return err
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := listen(ctx, c.listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if c.addrFile != "" {
		if err := writeFileAtomic(c.addrFile, addr); err != nil {
			return err
		}
	}
	logger.InfoContext(ctx, "listening", "addr", addr, "tls", srv.TLSConfig != nil, "steps", len(script.Steps), "require_key", requireKey != "")
	return serve(ctx, srv, ln)
}

// serve runs srv on ln until ctx is done, then shuts it down gracefully.
func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// loadScript reads the script file, or returns the demo script for "".
func loadScript(path string) (mockmodel.Script, error) {
	if path == "" {
		return mockmodel.DefaultScript, nil
	}
	f, err := os.Open(path) //nolint:gosec // G304: the script file named on the command line
	if err != nil {
		return mockmodel.Script{}, fmt.Errorf("open script: %w", err)
	}
	defer f.Close()
	s, err := mockmodel.LoadScript(f)
	if err != nil {
		return mockmodel.Script{}, fmt.Errorf("load script %s: %w", path, err)
	}
	return s, nil
}

// checkLoopback refuses listen addresses that are not loopback: the mock
// answers anyone, so it must not be reachable from the network.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on non-loopback address %q", addr)
}

// listen opens the listener and checks again that what was bound is
// loopback ("localhost" is resolved by the system).
func listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("refusing to serve on non-loopback address %s", ln.Addr())
	}
	return ln, nil
}

// writeFileAtomic replaces path with data, so a reader never sees a
// partial address.
func writeFileAtomic(path, data string) error {
	return fsutil.WriteFileAtomic(path, []byte(data), 0o600)
}
