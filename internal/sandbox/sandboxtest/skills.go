package sandboxtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// EchoSkill copies examples/skills/echo into a fresh directory with its
// sidecar built, as a user would have it before registering.
func EchoSkill(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
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

// Fingerprint is what the echo sidecar's /whoami reports for a token.
func Fingerprint(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// SkillProbe is a shell script, run inside a sandbox with the echo skill
// mounted, that uses it over the facade socket and the in-sandbox TCP port
// (SSE timed per frame, a WebSocket round trip) and then searches every
// process's environment and command line and the writable trees for
// secret.
func SkillProbe(secret string) string {
	return `set -u
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
python3 - "` + base64.StdEncoding.EncodeToString([]byte(secret)) + `" <<'PY'
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
}

// CheckSkillProbe fails t unless out (SkillProbe's output) shows every
// transport working, the sidecar holding secret (twice, by fingerprint),
// SSE arriving frame by frame, and the secret nowhere inside.
func CheckSkillProbe(t testing.TB, out, secret string) {
	t.Helper()
	if n := strings.Count(out, `fingerprint":"`+Fingerprint(secret)); n != 2 {
		t.Errorf("the sidecar did not see the secret over both transports (%d fingerprints)\n%s", n, out)
	}
	for _, w := range []string{"via-socket", "via-tcp", "no-token 401", "secret-hits 0 []", `"greeting":"hello"`, "ping echoed", "ws HTTP/1.1 101", "ws-echo round-trip", "done"} {
		if !strings.Contains(out, w) {
			t.Errorf("skill probe output lacks %q\n%s", w, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("the secret is visible inside the sandbox\n%s", out)
	}
	var times []string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, "sse ") {
			times = append(times, strings.Fields(l)[1])
		}
	}
	if len(times) < 3 || times[0] == times[len(times)-1] {
		t.Errorf("SSE not incremental: %v", times)
	}
}
