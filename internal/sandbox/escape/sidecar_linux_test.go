//go:build linux

package escape_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/skills"
)

// probeSidecar answers GET /probe with what it could do from inside its
// sandbox. It is Python so the test needs no build step.
const probeSidecar = `#!/usr/bin/env python3
import errno, http.server, json, os
def probe(op):
    try:
        op()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/status":
            body = b'{"ok": true}'
        else:
            home, work = os.environ["PROBE_HOME"], os.environ["PROBE_WORK"]
            r = {
                "cwd": os.getcwd(),
                "read-own-files": probe(lambda: open("SKILL.md").read()),
                "read-ssh-key": probe(lambda: open(home + "/.ssh/id_ed25519").read()),
                "read-project": probe(lambda: open(work + "/README").read()),
                "write-project": probe(lambda: open(work + "/from-sidecar", "w").write("x")),
                "write-snapshot": probe(lambda: open("planted.py", "w").write("x")),
                "write-data": probe(lambda: open(os.environ["PROBE_DATA"] + "/state.json", "w").write("{}")),
                "secret": "present" if os.environ.get("PROBE_SECRET") == "sidecar-only-7f3e" else "missing",
                "pid1": open("/proc/1/cmdline").read().split("\0")[0],
            }
            if os.environ.get("PROBE_NET"):
                import socket, urllib.request, urllib.error
                def fetch(u):
                    try:
                        return str(urllib.request.urlopen(u, timeout=5).status)
                    except urllib.error.HTTPError as e:
                        return str(e.code) + " " + e.headers.get("X-Warden-Deny", "")
                    except Exception as e:
                        return type(e).__name__
                r["allowed-via-proxy"] = fetch(os.environ["PROBE_NET"])
                r["denied-via-proxy"] = fetch("http://elsewhere.test/")
                r["direct"] = probe(lambda: socket.create_connection(("1.1.1.1", 443), 3))
            body = json.dumps(r).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
import sys
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()  # ${SIDECAR_PORT} in the manifest's argv
`

const probeManifest = `name: probe
type: rest
version: 1.0.0
description: sidecar confinement probe
sidecar:
  command: ["python3", "./sidecar.py", "${SIDECAR_PORT}"]
  mount: probe
  env_passthrough: [PROBE_HOME, PROBE_WORK, PROBE_DATA, PROBE_NET]
  secrets:
    - name: PROBE_SECRET
  health:
    path: /status
    timeout_ms: 10000
    interval_ms: 50
`

// TestSidecarSandbox: a sidecar runs in a sandbox of its own, under the
// session's backend. It starts in its approved snapshot and reads it,
// writes only its data dir, holds its secret, and cannot read the user's
// secrets, the agent's project, or change its own code (threat F5: a
// sidecar is code someone else wrote). Under the landlock backend the
// facade is a token-gated loopback port only.
func TestSidecarSandbox(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed (CI installs it)")
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) { sidecarSandbox(t, backend) })
	}
}

func sidecarSandbox(t *testing.T, backend string) {
	// Outside /tmp: without a mount namespace, /tmp is the host's, which
	// the landlock backend does not grant.
	e := sandboxtest.NewEnvOutsideTmp(t)
	warden, dataDir := probeSkill(t, e, e.Home, "probe", "")
	state := filepath.Join(e.Home, ".local", "state")
	// Over the socket under bwrap; under landlock there is no socket (the
	// target cannot even create one) and the port takes the token.
	script := `curl -sS --unix-socket "$WARDEN_SOCKET" http://warden/probe/probe`
	if backend == "landlock" {
		script = `test -z "${WARDEN_SOCKET:-}" || echo "socket offered"; python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -n 1 >&2; curl -sS -H "Authorization: Bearer $WARDEN_TOKEN" "${WARDEN_PROBE_BASE}probe"`
	}
	r := warden("run", "--backend", backend, "--skill", "probe", "--", "sh", "-c", script)
	got := probeAnswer(t, r)
	want := map[string]string{
		"read-own-files": "ok",
		"read-ssh-key":   "ENOENT", // $HOME is a throw-away tmpfs
		"read-project":   "ENOENT",
		"write-project":  "ENOENT",
		"write-snapshot": "EROFS",
		"write-data":     "ok",
		"secret":         "present",
		"pid1":           "/run/warden/warden", // warden's PID 1: a PID namespace of its own
	}
	if backend == "landlock" {
		// No mount or PID namespace: the same paths exist, Landlock
		// refuses them.
		want["read-ssh-key"], want["read-project"], want["write-project"], want["write-snapshot"] = "EACCES", "EACCES", "EACCES", "EACCES"
		delete(want, "pid1")
		if !strings.Contains(r.Stderr, "PermissionError") {
			t.Errorf("the target could create an AF_UNIX socket under landlock:\n%s", r)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if !strings.Contains(got["cwd"], filepath.Join(state, "warden", "skills", "probe")) {
		t.Errorf("the sidecar starts in %s, not its snapshot", got["cwd"])
	}
	if _, err := os.Stat(filepath.Join(e.Work, "from-sidecar")); err == nil {
		t.Error("the sidecar wrote into the agent's project")
	}
	if _, err := os.Stat(filepath.Join(dataDir, "state.json")); err != nil {
		t.Errorf("the sidecar's data dir write did not land on the host: %v", err)
	}
}

// TestSidecarNetworkConfined: a sidecar whose manifest declares network
// rules runs in an empty network namespace; warden reaches it through a
// Unix socket PID 1 relays in, and its own requests leave only through its
// egress proxy: the allowed host works, another is refused with the
// proxy's reason, and a direct connection has no route.
func TestSidecarNetworkConfined(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed (CI installs it)")
	}
	e := sandboxtest.NewEnv(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("upstream")) }))
	t.Cleanup(up.Close)
	port := up.Listener.Addr().(*net.TCPAddr).Port
	warden, _ := probeSkill(t, e, t.TempDir(), "netprobe",
		fmt.Sprintf("  network:\n    allow: [\"allowed.test:%d\"]\n    hosts: {allowed.test: 127.0.0.1, elsewhere.test: 127.0.0.1}\n    allow_private_destinations: true\n", port),
		fmt.Sprintf("PROBE_NET=http://allowed.test:%d/", port))
	got := probeAnswer(t, warden("run", "--skill", "netprobe", "--", "curl", "-sS", "--unix-socket", "/run/warden/facade.sock", "http://warden/netprobe/probe"))
	for k, v := range map[string]string{
		"allowed-via-proxy": "200",
		"denied-via-proxy":  "403 host-not-allowed",
		"direct":            "ENETUNREACH",
		"secret":            "present",
		"read-ssh-key":      "ENOENT",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// probeSkill registers a probe skill named name (manifest: probeManifest
// plus extra under sidecar:) with its secret, keeping warden's state and
// the skill's data dir under base (outside /tmp for the landlock backend).
// It returns how to run warden there, and the skill's data dir.
func probeSkill(t *testing.T, e *sandboxtest.Env, base, name, extra string, env ...string) (func(args ...string) sandboxtest.Result, string) {
	t.Helper()
	skill := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := strings.NewReplacer("name: probe", "name: "+name, "mount: probe", "mount: "+name).Replace(probeManifest) + extra
	for file, body := range map[string]string{
		"SKILL.md":   "---\nname: " + name + "\ndescription: Reports what its sidecar can reach.\n---\nProbe.\n",
		"omac.yaml":  manifest,
		"sidecar.py": probeSidecar,
	} {
		if err := os.WriteFile(filepath.Join(skill, file), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state, data := filepath.Join(base, ".local", "state"), filepath.Join(base, ".local", "share")
	t.Cleanup(func() { _ = skills.RemoveTree(filepath.Join(state, "warden")) })
	dataDir := filepath.Join(data, "warden-skill-data", name)
	all := e.Environ(append([]string{
		"WARDEN_KEYRING_BACKEND=file", "WARDEN_KEYRING_PASSPHRASE=p", "XDG_STATE_HOME=" + state, "XDG_DATA_HOME=" + data,
		"PROBE_HOME=" + e.Home, "PROBE_WORK=" + e.Work, "PROBE_DATA=" + dataDir,
	}, env...)...)
	warden := func(args ...string) sandboxtest.Result {
		return sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: all, Args: args})
	}
	secrets := filepath.Join(t.TempDir(), "probe.env")
	if err := os.WriteFile(secrets, []byte("PROBE_SECRET=sidecar-only-7f3e\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := warden("skill", "register", skill, "--secrets-from", secrets, "--yes"); r.Code != 0 {
		t.Fatalf("register\n%s", r)
	}
	return warden, dataDir
}

// probeAnswer decodes the probe's JSON answer from a run.
func probeAnswer(t *testing.T, r sandboxtest.Result) map[string]string {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("run\n%s", r)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("probe answer: %v\n%s", err, r)
	}
	return got
}
