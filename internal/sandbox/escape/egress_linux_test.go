//go:build linux

package escape_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wardenhq/warden/internal/mockmodel"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// upstreams are loopback test servers standing in for the internet: a
// plain HTTP one and an HTTPS one whose certificate (for *.test) is signed
// by a test CA that warden's proxy is told to trust through SSL_CERT_FILE.
type upstreams struct {
	httpPort, httpsPort int
	caFile              string
	hits                atomic.Int64
}

func newUpstreams(t *testing.T) *upstreams {
	t.Helper()
	u := &upstreams{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		if got := r.Header.Get("Proxy-Authorization"); got != "" {
			http.Error(w, "proxy credentials leaked upstream", http.StatusTeapot)
			return
		}
		if r.URL.Path == "/ok/cred" {
			if r.Header.Get("X-Api-Key") == testSecret {
				fmt.Fprint(w, "key-ok")
			} else {
				fmt.Fprintf(w, "key-bad (%d bytes)", len(r.Header.Get("X-Api-Key")))
			}
			return
		}
		fmt.Fprintf(w, "hello from %s %s", r.Method, r.URL.Path)
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	u.httpPort = hs.Listener.Addr().(*net.TCPAddr).Port

	caPEM, cert, err := mockmodel.SelfSigned("allowed.test", "intercepted.test", "denied.test")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	u.httpsPort = ts.Listener.Addr().(*net.TCPAddr).Port
	u.caFile = filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(u.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return u
}

func (u *upstreams) policy(t *testing.T, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	body := fmt.Sprintf(`version: 1
network:
  mode: filtered
  allow: ["allowed.test:%[1]d", "allowed.test:%[2]d"]
  deny: ["denied.test"]
  rules: ["GET intercepted.test:%[2]d/ok/**", "POST intercepted.test:%[2]d/ok/upload"]
  allow_private_destinations: true
  hosts: {"allowed.test": "127.0.0.1", "intercepted.test": "127.0.0.1", "denied.test": "127.0.0.1", "elsewhere.test": "127.0.0.1"}
%[3]s`, u.httpPort, u.httpsPort, extra)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEgress is threat class E through the real sandbox, with curl,
// Python, Node and git as the clients, under both Linux backends.
func TestEgress(t *testing.T) {
	u := newUpstreams(t)
	pol := u.policy(t, "")
	noPrivate := u.policy(t, "")
	if err := os.WriteFile(noPrivate, []byte(strings.Replace(mustRead(t, pol), "allow_private_destinations: true", "allow_private_destinations: false", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	hp, sp := u.httpPort, u.httpsPort
	curl := func(args string) string {
		return "curl -sS -o /dev/null -D - --max-time 10 " + args + " 2>&1 | head -n 20; true"
	}
	type erow struct {
		id, name, script string
		policy           string
		want             []string // all must appear in the output
		deny             []string // none may appear
	}
	rows := []erow{
		{"E0", "allowed host over plain HTTP (curl)", curl(fmt.Sprintf("http://allowed.test:%d/x", hp)), pol, []string{"200 OK"}, nil},
		{"E0", "allowed host over HTTPS CONNECT (curl)", curl(fmt.Sprintf("--cacert %s https://allowed.test:%d/x", u.caFile, sp)), pol, []string{"200"}, nil},
		{"E0", "intercepted HTTPS, allowed path (curl)", curl(fmt.Sprintf("https://intercepted.test:%d/ok/a", sp)), pol, []string{"200"}, nil},
		{"E0", "Python urllib with the proxy variables", fmt.Sprintf(`python3 -c 'import urllib.request as u; print(u.urlopen("http://allowed.test:%d/py").read().decode())'`, hp), pol, []string{"hello from GET /py"}, nil},
		{"E0", "Node through the proxy", fmt.Sprintf(`node -e 'const h=require("http");const p=new URL(process.env.HTTP_PROXY);h.get({host:p.hostname,port:p.port,path:"http://allowed.test:%[1]d/node",headers:{"Host":"allowed.test:%[1]d","Proxy-Authorization":"Basic "+Buffer.from(decodeURIComponent(p.username)+":"+decodeURIComponent(p.password)).toString("base64")}},r=>{let b="";r.on("data",d=>b+=d);r.on("end",()=>console.log(r.statusCode,b))})'`, hp), pol, []string{"200 hello from GET /node"}, nil},
		{"E0", "git over intercepted HTTPS reaches the allowed path", fmt.Sprintf("GIT_TRACE_CURL=1 git ls-remote https://intercepted.test:%d/ok/repo.git 2>&1 | grep -E 'HTTP/1.1 [0-9]+|fatal' ; true", sp), pol, []string{"HTTP/1.1 200"}, []string{"403", "unable to access"}},
		{"E2", "denied host over plain HTTP", curl(fmt.Sprintf("http://denied.test:%d/", hp)), pol, []string{"403", "X-Warden-Deny: host-denied"}, nil},
		{"E3", "allowed host on another port", curl(fmt.Sprintf("--cacert %s https://allowed.test:%d/", u.caFile, hp+1)), pol, []string{"403"}, []string{"200"}},
		{"E3", "host not on any list", curl(fmt.Sprintf("http://elsewhere.test:%d/", hp)), pol, []string{"403", "X-Warden-Deny: host-not-allowed"}, nil},
		{"E7", "intercepted HTTPS, wrong path", curl(fmt.Sprintf("https://intercepted.test:%d/secret", sp)), pol, []string{"403", "path-not-allowed"}, nil},
		{"E7", "intercepted HTTPS, wrong method", curl(fmt.Sprintf("-X DELETE https://intercepted.test:%d/ok/a", sp)), pol, []string{"403", "method-not-allowed"}, nil},
		{"E7", "git push-style POST to a read-only path", fmt.Sprintf("git ls-remote https://intercepted.test:%d/other/repo.git 2>&1; true", sp), pol, []string{"403"}, nil},
		{"E10", "allowed name resolving to a private address", curl(fmt.Sprintf("http://allowed.test:%d/", hp)), noPrivate, []string{"403", "private-destination"}, []string{"200 OK"}},
		{"E11", "decimal IP literal sent to the proxy as is", fmt.Sprintf(`python3 -c 'import os,socket,base64;a=os.environ["HTTP_PROXY"].split("@")[1];h,p=a.split(":");s=socket.create_connection((h,int(p)));t=base64.b64encode(os.environ["HTTP_PROXY"].split("//")[1].split("@")[0].encode()).decode();s.sendall(("GET http://2130706433:%d/ HTTP/1.1\r\nHost: 2130706433:%d\r\nProxy-Authorization: Basic "+t+"\r\n\r\n").encode());print(s.recv(300).decode())'`, hp, hp), pol, []string{"403", "X-Warden-Deny"}, []string{"200 OK"}},
		{"E11", "hex IP literal through the proxy", curl(fmt.Sprintf("--noproxy '' http://0x7f.1:%d/", hp)), pol, []string{"403"}, []string{"200 OK"}},
		{"E11", "IPv4-mapped IPv6 literal", curl(fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", hp)), pol, []string{"403"}, []string{"200 OK"}},
		{"E4", "NUL in a CONNECT host", fmt.Sprintf(`python3 -c 'import os,socket,base64;a=os.environ["HTTP_PROXY"].split("@")[1];h,p=a.split(":");s=socket.create_connection((h,int(p)));t=base64.b64encode(os.environ["HTTP_PROXY"].split("//")[1].split("@")[0].encode()).decode();s.sendall(("CONNECT evil.test\x00.allowed.test:%d HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic "+t+"\r\n\r\n").encode());print(s.recv(200).decode().splitlines()[0])'`, sp), pol, []string{"HTTP/1.1 400"}, []string{" 200 "}},
		{"E14", "CRLF header injection in a CONNECT host", fmt.Sprintf(`python3 -c 'import os,socket,base64;a=os.environ["HTTP_PROXY"].split("@")[1];h,p=a.split(":");s=socket.create_connection((h,int(p)));t=base64.b64encode(os.environ["HTTP_PROXY"].split("//")[1].split("@")[0].encode()).decode();s.sendall(("CONNECT allowed.test:%d\r\nX-Evil: 1 HTTP/1.1\r\nProxy-Authorization: Basic "+t+"\r\n\r\n").encode());print(s.recv(200).decode().splitlines()[0])'`, sp), pol, []string{"HTTP/1.1 400"}, []string{" 200 "}},
		{"E5", "suffix slip: allowed.test.elsewhere.test", curl(fmt.Sprintf("http://allowed.test.elsewhere.test:%d/", hp)), pol, []string{"403"}, []string{"200 OK"}},
		{"E11", "SOCKS5 to a denied host", curl(fmt.Sprintf(`--proxy "$ALL_PROXY" http://denied.test:%d/`, hp)), pol, []string{"curl: ("}, []string{"200 OK"}},
		{"E11", "SOCKS5 to an allowed host", curl(fmt.Sprintf(`--proxy "$ALL_PROXY" http://allowed.test:%d/`, hp)), pol, []string{"200 OK"}, nil},
		{"C11", "the proxy without the session token", curl(fmt.Sprintf(`--proxy "http://${HTTP_PROXY##*@}" http://allowed.test:%d/`, hp)), pol, []string{"407"}, []string{"200 OK"}},
		{"E1", "direct connection ignoring the proxy", curl(fmt.Sprintf("--noproxy '*' http://127.0.0.1:%d/", hp)), pol, []string{"curl: (7)"}, []string{"200 OK"}},
		{"E8", "DNS query from inside", `python3 -c 'import socket; socket.getaddrinfo("example.com", 80)' 2>&1 | tail -1; true`, pol, []string{"gaierror"}, nil},
		{"E9", "UDP datagram out", `python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("192.0.2.1", 53)); print("sent")' 2>&1 | tail -1; true`, pol, []string{"Error"}, []string{"sent"}},
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			for _, r := range rows {
				t.Run(r.id+" "+r.name, func(t *testing.T) {
					t.Parallel()
					e := sandboxtest.NewEnv(t)
					args := []string{"run", "--backend", backend, "--policy", r.policy, "--allow-read", filepath.Dir(u.caFile), "--", "sh", "-c", r.script}
					res := sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: e.Environ("SSL_CERT_FILE=" + u.caFile), Args: args})
					out := res.Stdout + res.Stderr
					for _, w := range r.want {
						if !strings.Contains(out, w) {
							t.Errorf("output lacks %q\n%s", w, res)
						}
					}
					for _, d := range r.deny {
						if strings.Contains(out, d) {
							t.Errorf("output has %q\n%s", d, res)
						}
					}
				})
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const testSecret = "s3cr3t-value-4a7f"

// TestEgressCredentials: a secret from warden's store is attached at egress
// to the one host it is for; the sandbox holds only a placeholder, which is
// refused on the way to any other host (threat E16).
func TestEgressCredentials(t *testing.T) {
	u := newUpstreams(t)
	state := t.TempDir()
	keyring := []string{"WARDEN_KEYRING_BACKEND=file", "WARDEN_KEYRING_PASSPHRASE=test passphrase", "XDG_STATE_HOME=" + state}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			e := sandboxtest.NewEnv(t)
			env := e.Environ(append([]string{"SSL_CERT_FILE=" + u.caFile}, keyring...)...)
			set := sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: env, Args: []string{"secret", "set", "net", "test-key"}, Stdin: testSecret + "\n"})
			if set.Code != 0 || strings.Contains(set.Stdout+set.Stderr, testSecret) {
				t.Fatalf("secret set\n%s", set)
			}
			pol := u.policy(t, "  credentials:\n    - {host: intercepted.test, header: X-Api-Key, secret: test-key, env: TEST_API_KEY}\n")
			script := fmt.Sprintf(`curl -sS -H "X-Api-Key: $TEST_API_KEY" https://intercepted.test:%d/ok/cred; echo
curl -sS -D - -o /dev/null -H "X-Api-Key: $TEST_API_KEY" http://allowed.test:%d/ | head -n 3
echo "env=$TEST_API_KEY"
grep -rl %s /proc/*/environ /proc/*/cmdline "$HOME" "${TMPDIR:-/tmp}" 2>/dev/null | head -n 3
echo done`, u.httpsPort, u.httpPort, testSecret)
			res := sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: env, Args: []string{"run", "--backend", backend, "--policy", pol, "--", "sh", "-c", script}})
			out := res.Stdout + res.Stderr
			for _, w := range []string{"key-ok", "X-Warden-Deny: credential-scope", "env=warden-placeholder-", "done"} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q\n%s", w, res)
				}
			}
			if strings.Contains(out, testSecret) {
				t.Errorf("the secret is visible inside the sandbox\n%s", res)
			}
		})
	}
}
