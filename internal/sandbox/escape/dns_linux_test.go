//go:build linux

package escape_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// fakeDNS answers A queries for name with answer(n), n counting from 0,
// and every other query with no records. It returns its address.
func fakeDNS(t *testing.T, name string, answer func(n int) []netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	var count atomic.Int32
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if len(q) < 12 {
				continue
			}
			// The question: labels, then QTYPE and QCLASS.
			i, labels := 12, []string{}
			for i < len(q) && q[i] != 0 {
				l := int(q[i])
				if i+1+l > len(q) {
					break
				}
				labels = append(labels, string(q[i+1:i+1+l]))
				i += 1 + l
			}
			if i+5 > len(q) {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[i+1:])
			question := q[12 : i+5]
			var answers []netip.Addr
			if qtype == 1 && strings.EqualFold(strings.Join(labels, "."), name) {
				answers = answer(int(count.Add(1) - 1))
			}
			resp := make([]byte, 12, 512)
			copy(resp, q[:2])                            // ID
			binary.BigEndian.PutUint16(resp[2:], 0x8180) // response, recursion desired and available
			binary.BigEndian.PutUint16(resp[4:], 1)      // QDCOUNT
			binary.BigEndian.PutUint16(resp[6:], uint16(len(answers)))
			resp = append(resp, question...)
			for _, a := range answers {
				rr := []byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4} // name pointer, A, IN, TTL 0, RDLENGTH 4
				b := a.As4()
				resp = append(append(resp, rr...), b[:]...)
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestEgressDNSRebinding is threat E10 through the real sandbox, with the
// proxy asking a DNS server that rebinds: an allowed name that first
// resolves to a public address, then to loopback, and one whose answer
// mixes both. Every answer is checked when it is used: the rebound and the
// mixed requests are refused (403 private-destination) and the loopback
// service behind them never sees a request.
func TestEgressDNSRebinding(t *testing.T) {
	var hits atomic.Int32
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("internal"))
	}))
	t.Cleanup(inner.Close)
	port := inner.Listener.Addr().(*net.TCPAddr).Port
	public, loopback := netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("127.0.0.1")
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rebind := fakeDNS(t, "rebind.test", func(n int) []netip.Addr {
				if n == 0 {
					return []netip.Addr{public}
				}
				return []netip.Addr{loopback}
			})
			mixed := fakeDNS(t, "mixed.test", func(int) []netip.Addr { return []netip.Addr{public, loopback} })
			e := sandboxtest.NewEnv(t)
			for _, tc := range []struct {
				name, dns, script string
				want              []string
			}{
				{
					"rebinding name", rebind, fmt.Sprintf(
						"curl -s -m 5 -o /dev/null -w 'first=%%{http_code}\\n' http://rebind.test:%[1]d/; curl -s -m 5 -D - -o /dev/null http://rebind.test:%[1]d/", port),
					[]string{"403", "X-Warden-Deny: private-destination"},
				},
				{
					"public and private in one answer", mixed, fmt.Sprintf("curl -s -m 5 -D - -o /dev/null http://mixed.test:%d/", port),
					[]string{"403", "X-Warden-Deny: private-destination"},
				},
			} {
				t.Run(tc.name, func(t *testing.T) {
					pol := filepath.Join(t.TempDir(), "policy.yaml")
					body := fmt.Sprintf("version: 1\nnetwork:\n  mode: filtered\n  allow: [\"rebind.test\", \"mixed.test\", \"rebind.test:%[1]d\", \"mixed.test:%[1]d\"]\n  dns: [%q]\n", port, tc.dns)
					if err := os.WriteFile(pol, []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
					res := sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: e.Environ(), Args: []string{"run", "--backend", backend, "--policy", pol, "--", "sh", "-c", tc.script}})
					out := res.Stdout + res.Stderr
					for _, w := range tc.want {
						if !strings.Contains(out, w) {
							t.Errorf("output lacks %q\n%s", w, res)
						}
					}
					if strings.Contains(out, "first=403") {
						t.Errorf("the public answer was refused: the name was not even allowed\n%s", res)
					}
				})
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the loopback service got %d requests through a rebinding name", n)
			}
		})
	}
}
