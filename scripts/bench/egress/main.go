// Command egress benchmarks HTTPS fetches from a local origin directly,
// through warden's egress proxy (CONNECT and intercepted) and through srt's
// proxy, in one run with one client. Each fetch opens a new TCP and TLS
// connection, as a CLI tool does; cases run round-robin after a warm-up.
//
//	go run ./scripts/bench/egress [-n 300] [-srt http://127.0.0.1:PORT]
//
// warden's proxy runs in a child process (this binary re-executed), as srt's
// does, so neither shares the client's scheduler. With -srt the origin must
// be reachable as bench.test through it: scripts/bench.sh starts
// scripts/bench/srt-proxy.mjs with "bench.test,127.0.0.1".
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/mockmodel"

	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/egress/mitm"
)

const token = "bench-token"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "__warden-proxy" {
		if err := serveWarden(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "warden proxy:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 300, "timed fetches per case")
	warm := flag.Int("warmup", 30, "untimed fetches per case first")
	srt := flag.String("srt", "", "srt proxy URL (scripts/bench/srt-proxy.mjs)")
	flag.Parse()
	if err := run(*n, *warm, *srt); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// sized answers GET /<n> with n bytes.
func sized(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
	w.Header().Set("Content-Length", strconv.Itoa(n))
	buf := make([]byte, 32<<10)
	for n > 0 {
		k := min(n, len(buf))
		_, _ = w.Write(buf[:k])
		n -= k
	}
}

// wardenChild is warden's proxy in a child process; reset asks it to drop
// its leaf cache.
type wardenChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	addr  string
	caPEM []byte
}

func (w *wardenChild) reset() error {
	if _, err := io.WriteString(w.in, "reset\n"); err != nil {
		return err
	}
	_, err := w.out.ReadString('\n')
	return err
}

func startWarden(port int, rootPEM []byte, dir string) (*wardenChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	root := dir + "/origin.pem"
	if err := os.WriteFile(root, rootPEM, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "__warden-proxy", strconv.Itoa(port), root, dir+"/ca.pem") //nolint:gosec,noctx // G204: this benchmark re-executing itself
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &wardenChild{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := w.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("warden proxy did not start: %w", err)
	}
	w.addr = strings.TrimSpace(line)
	if w.caPEM, err = os.ReadFile(dir + "/ca.pem"); err != nil { //nolint:gosec // G304: the benchmark's own temp dir
		return nil, err
	}
	return w, nil
}

// serveWarden runs in the child: bench.test is allowed (CONNECT is
// spliced), mitm.bench.test has a rule (intercepted).
func serveWarden(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("want PORT ROOT.pem CA-OUT.pem")
	}
	port := args[0]
	rootPEM, err := os.ReadFile(args[1]) //nolint:gosec // G304: a path from the parent benchmark process
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(rootPEM)
	ca, err := mitm.New(mitm.Options{Permitted: []string{"mitm.bench.test"}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(args[2], ca.CertPEM(), 0o600); err != nil { //nolint:gosec // G703: a path from the parent benchmark process
		return err
	}
	p, err := egress.New(egress.Config{
		Allow:        []string{"bench.test:" + port},
		Rules:        []string{"GET mitm.bench.test:" + port + "/**"},
		AllowPrivate: true,
		Hosts:        map[string]string{"bench.test": "127.0.0.1", "mitm.bench.test": "127.0.0.1"},
		Token:        token,
		CA:           ca,
		RootCAs:      roots,
		Audit:        io.Discard,
	})
	if err != nil {
		return err
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = p.Serve(l) }()
	fmt.Println(l.Addr().String())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		ca.ResetCache()
		fmt.Println("ok")
	}
	return p.Close()
}

type benchCase struct {
	name    string
	host    string
	size    int
	client  *http.Client
	before  func() error // untimed, before each fetch
	times   []time.Duration
	failed  int
	lastErr error
}

func newClient(proxy *url.URL, roots *x509.CertPool) *http.Client {
	d := &net.Dialer{}
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	if proxy != nil {
		tr.Proxy = http.ProxyURL(proxy)
	} else {
		// Direct: the names resolve to the origin, as the proxies' hosts
		// tables do.
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func run(n, warm int, srt string) error {
	certPEM, cert, err := mockmodel.SelfSigned("bench.test", "mitm.bench.test")
	if err != nil {
		return err
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(sized), ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port

	dir, err := os.MkdirTemp("", "warden-bench-egress")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	w, err := startWarden(port, certPEM, dir)
	if err != nil {
		return err
	}
	defer func() { w.in.Close(); _ = w.cmd.Wait() }()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	roots.AppendCertsFromPEM(w.caPEM)
	wardenURL := &url.URL{Scheme: "http", User: url.UserPassword("bench", token), Host: w.addr}
	direct := newClient(nil, roots)
	viaWarden := newClient(wardenURL, roots)
	var viaSrt *http.Client
	if srt != "" {
		u, err := url.Parse(srt)
		if err != nil {
			return err
		}
		viaSrt = newClient(u, roots)
	}

	var cases []*benchCase
	for _, size := range []int{12, 1 << 20} {
		cases = append(cases,
			&benchCase{name: "direct", host: "bench.test", size: size, client: direct},
			&benchCase{name: "warden CONNECT", host: "bench.test", size: size, client: viaWarden},
			&benchCase{name: "warden intercepted, first request (leaf minted)", host: "mitm.bench.test", size: size, client: viaWarden, before: w.reset},
			&benchCase{name: "warden intercepted, leaf cached", host: "mitm.bench.test", size: size, client: viaWarden},
		)
		if viaSrt != nil {
			cases = append(cases, &benchCase{name: "srt CONNECT", host: "bench.test", size: size, client: viaSrt})
		}
	}
	for i := range warm + n {
		for _, c := range cases {
			if c.before != nil {
				if err := c.before(); err != nil {
					return err
				}
			}
			d, err := fetch(c.client, fmt.Sprintf("https://%s:%d/%d", c.host, port, c.size), c.size)
			if err != nil {
				// Counted and shown, not timed: a peer's failure must not
				// end the run.
				c.failed++
				c.lastErr = err
				continue
			}
			if i >= warm {
				c.times = append(c.times, d)
			}
		}
	}
	fmt.Printf("HTTPS GET from a loopback origin, new TCP+TLS connection per fetch, %d fetches per case (after %d warm-up), round-robin\n\n", n, warm)
	fmt.Println("| size | path | p50 | mean | p50 vs direct | failed fetches |")
	fmt.Println("|---|---|---|---|---|---|")
	var base time.Duration
	for _, c := range cases {
		if len(c.times) == 0 {
			return fmt.Errorf("%s: every fetch failed: %w", c.name, c.lastErr)
		}
		slices.Sort(c.times)
		p50 := c.times[len(c.times)/2]
		var sum time.Duration
		for _, t := range c.times {
			sum += t
		}
		if c.name == "direct" {
			base = p50
		}
		sz := "12 B"
		if c.size == 1<<20 {
			sz = "1 MiB"
		}
		fmt.Printf("| %s | %s | %s | %s | %.2f× (+%s) | %d |\n", sz, c.name, ms(p50), ms(sum/time.Duration(len(c.times))), float64(p50)/float64(base), ms(p50-base), c.failed)
		if c.lastErr != nil {
			fmt.Fprintf(os.Stderr, "%s, %s: %d failed fetches, last: %v\n", sz, c.name, c.failed, c.lastErr)
		}
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func fetch(cl *http.Client, u string, size int) (time.Duration, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	k, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || k != int64(size) {
		return 0, fmt.Errorf("status %d, %d of %d bytes", resp.StatusCode, k, size)
	}
	return d, nil
}
