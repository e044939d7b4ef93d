//go:build linux

package escape_test

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/skills"
)

const echoSecret = "echo-secret-9c1e"

// echoSkill copies examples/skills/echo into a fresh directory with its
// sidecar built, as a user would have it before registering.
func echoSkill(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "echo")
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples", "skills", "echo"), dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "sidecar", "echo-sidecar"), "./examples/skills/echo/sidecar")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build echo sidecar: %v: %s", err, out)
	}
	return dir
}

// TestSkillsEndToEnd registers the example skill with a secret, runs a
// sandbox with it, uses it over the facade socket and the in-sandbox TCP
// port (SSE streamed incrementally, WebSocket round trip), and proves the
// secret is in the sidecar and nowhere inside the sandbox. Then it attacks
// the trust anchor: a modified bundle, a planted config file and an
// agent-written skill are refused (threat F5; anchors.md §16.4–5).
func TestSkillsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real sandbox")
	}
	e := sandboxtest.NewEnv(t)
	skill := echoSkill(t)
	state := t.TempDir()
	// Approved snapshots are read-only trees; make them removable again.
	t.Cleanup(func() { _ = skills.RemoveTree(filepath.Join(state, "warden")) })
	env := e.Environ("WARDEN_KEYRING_BACKEND=file", "WARDEN_KEYRING_PASSPHRASE=e2e passphrase", "XDG_STATE_HOME="+state)
	warden := func(args ...string) sandboxtest.Result {
		return sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: env, Args: args})
	}
	secretsFile := filepath.Join(t.TempDir(), "echo.env")
	if err := os.WriteFile(secretsFile, []byte("ECHO_TOKEN="+echoSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := warden("skill", "register", skill, "--secrets-from", secretsFile, "--yes"); r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, echoSecret) {
		t.Fatalf("register\n%s", r)
	}
	fp := "fingerprint\":\"" + fingerprint(echoSecret)
	script := `set -u
curl -sS --unix-socket "$WARDEN_SOCKET" http://warden/echo/whoami; echo " via-socket"
curl -sS -H "Authorization: Bearer $WARDEN_TOKEN" "${WARDEN_ECHO_BASE}whoami"; echo " via-tcp"
curl -sS -o /dev/null -w "no-token %{http_code}\n" "${WARDEN_ECHO_BASE}whoami"
curl -sS --unix-socket "$WARDEN_SOCKET" http://warden/echo/status; echo
curl -sS --unix-socket "$WARDEN_SOCKET" -X POST --data-binary ping http://warden/echo/echo; echo " echoed"
start=$(date +%s%N)
curl -sS -N --unix-socket "$WARDEN_SOCKET" http://warden/echo/tick | while IFS= read -r line; do
  case "$line" in data:*) echo "sse $(( ($(date +%s%N) - start) / 1000000 ))ms $line";; esac
done
python3 - <<'PY'
import os, socket, base64
port = int(os.environ["OMAC_PORT"])
s = socket.create_connection(("127.0.0.1", port))
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET /echo/ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (port, os.environ["WARDEN_TOKEN"], key)).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print("ws", head.split(b"\r\n")[0].decode())
msg, mask = b"round-trip", os.urandom(4)
s.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))
hdr = s.recv(2)
print("ws-echo", s.recv(hdr[1] & 0x7f).decode())
PY
python3 - "` + base64.StdEncoding.EncodeToString([]byte(echoSecret)) + `" <<'PY'
import base64, glob, os, sys
needle = base64.b64decode(sys.argv[1])
hits = []
paths = glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline")
for top in (os.environ["HOME"], "/tmp", "/run"):
    for d, _, fs in os.walk(top):
        paths += [os.path.join(d, f) for f in fs]
for p in paths:
    try:
        if needle in open(p, "rb").read():
            hits.append(p)
    except OSError:
        pass
print("secret-hits", len(hits), hits[:3])
PY
echo done`
	r := warden("run", "--skill", "echo", "--", "sh", "-c", script)
	out := r.Stdout + r.Stderr
	if strings.Count(out, fp) != 2 {
		t.Errorf("the sidecar did not see the secret (fingerprint %s) over both transports\n%s", fp, r)
	}
	for _, w := range []string{"via-socket", "via-tcp", "no-token 401", "secret-hits 0 []", `"greeting":"hello"`, "ping echoed", "ws HTTP/1.1 101", "ws-echo round-trip", "done"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q\n%s", w, r)
		}
	}
	if strings.Contains(out, echoSecret) {
		t.Errorf("the secret is visible inside the sandbox\n%s", r)
	}
	// SSE frames arrive one by one (100 ms apart), not at the end.
	var times []string
	for l := range strings.SplitSeq(r.Stdout, "\n") {
		if strings.HasPrefix(l, "sse ") {
			times = append(times, strings.Fields(l)[1])
		}
	}
	if len(times) < 3 || times[0] == times[len(times)-1] {
		t.Errorf("SSE not incremental: %v", times)
	}

	// A planted config file in the project does not steer the sidecar.
	for _, p := range []string{".opencode/skill-config.yaml", ".warden/skill-config.yaml"} {
		full := filepath.Join(e.Work, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("echo:\n  ECHO_GREETING: pwned\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = warden("run", "--skill", "echo", "--", "curl", "-sS", "--unix-socket", "/run/warden/facade.sock", "http://warden/echo/status")
	if !strings.Contains(r.Stdout, `"greeting":"hello"`) {
		t.Errorf("planted config changed the sidecar\n%s", r)
	}
	// An agent-written skill is not registered, so it never runs.
	evil := filepath.Join(e.Work, ".agents", "skills", "evil")
	_ = os.MkdirAll(evil, 0o755)
	r = warden("run", "--skill", "evil", "--", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "evil") {
		t.Errorf("unregistered skill ran\n%s", r)
	}
	// A modified bundle is refused until approved again.
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: echo\ndescription: changed\n---\nchanged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = warden("run", "--skill", "echo", "--", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "echo") {
		t.Errorf("modified bundle ran\n%s", r)
	}
	if r := warden("skill", "approve", "echo"); r.Code != 0 {
		t.Fatalf("approve\n%s", r)
	}
	if r := warden("run", "--skill", "echo", "--", "true"); r.Code != 0 {
		t.Errorf("re-approved bundle refused\n%s", r)
	}
}
