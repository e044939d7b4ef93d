package launch

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/egress/mitm"
	"github.com/wardenhq/warden/internal/egress/prompt"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/secrets"
)

// CredentialScope is the secret-store scope of network.credentials.
const CredentialScope = "net"

// addCredentials reads each credential's secret from warden's secret store
// and gives the proxy a fresh random placeholder for it; only the
// placeholder enters the sandbox (in the credential's variable).
func addCredentials(cfg *egress.Config, creds []policy.Credential, sb *sandbox.Spec, open func() (secrets.Store, error)) error {
	if len(creds) == 0 {
		return nil
	}
	var store secrets.Store
	svc := secrets.ServiceForSkill(CredentialScope)
	for _, c := range creds {
		var value func() string
		if c.FromEnv != "" {
			v, ok := os.LookupEnv(c.FromEnv)
			if !ok || v == "" {
				return fmt.Errorf("launch: network.credentials for %s: $%s is not set", c.Host, c.FromEnv)
			}
			value = func() string { return v }
		} else {
			if store == nil {
				o, err := open()
				if err != nil {
					return fmt.Errorf("launch: network.credentials: %w", err)
				}
				store = o
			}
			s, err := store.Get(svc, c.Secret)
			if err != nil {
				return fmt.Errorf("launch: network.credentials for %s: secret %s/%s: %w (store it with: warden secret set %s %s)", c.Host, CredentialScope, c.Secret, err, CredentialScope, c.Secret)
			}
			value = s.RevealString
		}
		ph := make([]byte, 16)
		if _, err := rand.Read(ph); err != nil {
			return fmt.Errorf("launch: placeholder: %w", err)
		}
		placeholder := "warden-placeholder-" + hex.EncodeToString(ph)
		cfg.Credentials = append(cfg.Credentials, egress.Credential{Host: c.Host, Header: c.Header, Value: value, Basic: c.Basic, Placeholder: placeholder})
		if c.Env != "" {
			sb.Env = append(sb.Env, c.Env+"="+placeholder)
		}
	}
	return nil
}

// askFunc is the proxy's Ask for network.on_unknown: ask: the decisions
// the user remembered for this project (or globally), then a dialog or
// the terminal; "always" and "never" answers are remembered.
func askFunc(workdir string, openTTY func() (io.ReadWriteCloser, error), logger *slog.Logger) (func(context.Context, string, int) egress.Decision, error) {
	path, err := prompt.DefaultPath()
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	learned, err := prompt.OpenLearned(path)
	if err != nil {
		return nil, fmt.Errorf("launch: network.on_unknown: %w (fix the file, or remove it to forget every decision)", err)
	}
	log := logger.With("component", "prompt")
	return prompt.New(prompt.Config{
		Learned: learned,
		Asker:   prompt.Choose(prompt.ChooseOptions{Logger: log, OpenTTY: openTTY}),
		Scope:   workdir,
		Logger:  log,
	}).Ask, nil
}

// StateDir is warden's host-only state directory ($XDG_STATE_HOME/warden
// or ~/.local/state/warden), never visible inside a sandbox.
func StateDir() (string, error) { return config.StateDir() }

// AuditPath is the egress decision log.
func AuditPath() (string, error) {
	d, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "egress.jsonl"), nil
}

// systemRoots are the usual locations of the system CA bundle.
var systemRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem",
}

// egressSession is the filtering proxy of one session.
type egressSession struct {
	proxy *egress.Proxy
	ln    net.Listener
	audit io.Closer
	done  chan error
}

// EgressConfig maps the network policy onto the proxy's configuration.
func EgressConfig(n policy.NetworkSpec, token string, logger *slog.Logger) egress.Config {
	cfg := egress.Config{
		Allow: n.Allow, Deny: n.Deny, Rules: n.Rules,
		AllowPrivate: n.AllowPrivate, Hosts: n.Hosts,
		Token: token, Logger: logger,
	}
	if len(n.DNS) > 0 {
		cfg.Resolver = dnsResolver(n.DNS)
	}
	return cfg
}

// dnsResolver asks the given servers (IP:port, tried in turn) instead of
// the system's resolver.
func dnsResolver(servers []string) *net.Resolver {
	var next atomic.Uint32
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			server := servers[int(next.Add(1)-1)%len(servers)]
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
}

// startEgress prepares the proxy for network.mode filtered: its listener
// (a Unix socket bound into the sandbox, or for the landlock backend a
// loopback port Landlock lets the target reach), the interception CA when
// rules need it, and the sandbox's proxy and CA variables.
func startEgress(p *Plan, logger *slog.Logger) (*egressSession, error) {
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("launch: proxy token: %w", err)
	}
	token := hex.EncodeToString(tok)
	cfg := EgressConfig(p.Resolved.Network, token, logger.With("component", "egress"))
	if roots := p.Resolved.Network.UpstreamRoots; len(roots) > 0 {
		pool, err := upstreamRoots(roots)
		if err != nil {
			return nil, &PolicyError{Err: err}
		}
		cfg.RootCAs = pool
	}
	auditPath, err := AuditPath()
	if err != nil {
		return nil, err
	}
	af, err := os.OpenFile(auditPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600) //nolint:gosec // G304: our own state dir
	if err != nil {
		return nil, fmt.Errorf("launch: audit log: %w", err)
	}
	cfg.Audit = af
	es := &egressSession{audit: af, done: make(chan error, 1)}
	sb := p.Sandbox
	if err := addCredentials(&cfg, p.Resolved.Network.Credentials, sb, p.secretStore); err != nil {
		af.Close()
		return nil, err
	}
	if p.Resolved.Network.OnUnknown == "ask" {
		if cfg.Ask, err = askFunc(p.Resolved.Workdir, p.promptTTY, logger); err != nil {
			af.Close()
			return nil, err
		}
	}

	hosts, err := egress.InterceptHosts(cfg)
	if err != nil {
		af.Close()
		return nil, &PolicyError{Err: fmt.Errorf("network.rules: %w", err)}
	}
	var caBundle string
	if len(hosts) > 0 {
		state, err := StateDir()
		if err != nil {
			af.Close()
			return nil, err
		}
		ca, err := mitm.New(mitm.Options{Store: caKeyStore(state, p.secretStore), Permitted: hosts})
		if err != nil {
			af.Close()
			return nil, fmt.Errorf("launch: interception CA: %w", err)
		}
		cfg.CA = ca
		var roots []byte
		for _, r := range systemRoots {
			if b, err := os.ReadFile(r); err == nil { //nolint:gosec // G304: a fixed list of system paths
				roots = b
				break
			}
		}
		caBundle = filepath.Join(sb.RuntimeDir, "ca-bundle.pem")
		if err := os.WriteFile(caBundle, ca.BundlePEM(roots), 0o600); err != nil { //nolint:gosec // G703: our own fresh runtime dir
			af.Close()
			return nil, fmt.Errorf("launch: CA bundle: %w", err)
		}
	}
	proxy, err := egress.New(cfg)
	if err != nil {
		af.Close()
		return nil, &PolicyError{Err: fmt.Errorf("network: %w", err)}
	}
	es.proxy = proxy

	addr := sandbox.InnerProxyAddr
	switch p.Backend {
	case policy.BackendBwrap:
		sock := filepath.Join(sb.RuntimeDir, "egress.sock")
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "unix", sock)
		if err != nil {
			es.close()
			return nil, fmt.Errorf("launch: egress socket: %w", err)
		}
		if err := os.Chmod(sock, 0o600); err != nil {
			ln.Close()
			es.close()
			return nil, fmt.Errorf("launch: egress socket: %w", err)
		}
		es.ln = ln
		sb.Binds = append(sb.Binds, sandbox.Bind{Src: sock, Dst: sandbox.InnerEgressSocket})
		sb.Relays = append(sb.Relays, sandbox.Relay{Listen: sandbox.InnerProxyAddr, Unix: sandbox.InnerEgressSocket})
		if caBundle != "" {
			sb.Binds = append(sb.Binds, sandbox.Bind{Src: caBundle, Dst: sandbox.InnerCABundle})
			caBundle = sandbox.InnerCABundle
			if sb.Landlock != nil {
				sb.Landlock.FS = append(sb.Landlock.FS, landlockCA(caBundle)...)
			}
		}
	default:
		// No network namespace: a loopback port, reachable only with the
		// token, and the only TCP port Landlock lets the target connect to.
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			es.close()
			return nil, fmt.Errorf("launch: egress listener: %w", err)
		}
		es.ln = ln
		addr = ln.Addr().String()
		port, _ := strconv.Atoi(addr[len("127.0.0.1:"):])
		if sb.Landlock != nil {
			sb.Landlock.ConnectTCP = append(sb.Landlock.ConnectTCP, uint16(port)) //nolint:gosec // G115: a port from the kernel
			sb.Landlock.FS = append(sb.Landlock.FS, landlockCA(caBundle)...)
		}
	}
	httpURL := "http://warden:" + token + "@" + addr
	socksURL := "socks5h://warden:" + token + "@" + addr
	noProxy := "localhost,127.0.0.1,::1"
	sb.Env = append(sb.Env,
		"HTTP_PROXY="+httpURL, "HTTPS_PROXY="+httpURL, "ALL_PROXY="+socksURL,
		"http_proxy="+httpURL, "https_proxy="+httpURL, "all_proxy="+socksURL,
		"NO_PROXY="+noProxy, "no_proxy="+noProxy,
	)
	if caBundle != "" {
		for _, v := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "CODEX_CA_CERTIFICATE", "PIP_CERT", "AWS_CA_BUNDLE", "DENO_CERT"} {
			sb.Env = append(sb.Env, v+"="+caBundle)
		}
	}
	go func() { es.done <- proxy.Serve(es.ln) }()
	return es, nil
}

func (es *egressSession) close() {
	if es.proxy != nil {
		_ = es.proxy.Close()
	}
	if es.ln != nil {
		_ = es.ln.Close()
		if ua, ok := es.ln.Addr().(*net.UnixAddr); ok {
			if err := os.Remove(ua.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				_ = err // the runtime dir is removed anyway
			}
		}
	}
	if es.audit != nil {
		_ = es.audit.Close()
	}
}

// landlockCA grants the target read access to the CA bundle, which lives
// in the runtime dir, under the landlock backend.
func landlockCA(bundle string) []landlock.PathRule {
	if bundle == "" {
		return nil
	}
	return []landlock.PathRule{{Path: bundle, Access: landlock.ROFile, Why: "interception CA bundle"}}
}

// upstreamRoots is the system pool plus the PEM files of
// network.upstream_roots.
func upstreamRoots(files []string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // G304: a file the policy names
		if err != nil {
			return nil, fmt.Errorf("network.upstream_roots: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("network.upstream_roots: %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}
