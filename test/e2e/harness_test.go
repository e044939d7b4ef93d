//go:build e2e

// Package e2e runs the real agent harnesses (Claude Code, Codex CLI,
// OpenCode, Gemini CLI, installed from npm by `make e2e`) under `warden
// start`, against a scripted mock model reached over HTTPS through warden's
// egress proxy with interception, as a real model API would be.
package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/mockmodel"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	sandboxtest.Cleanup()
	os.Exit(code)
}

// modelHost is the model API's name; warden's proxy maps it to the mock.
const modelHost = "model.warden.test"

// forbiddenPath is visible read-only inside the sandbox (and writable by
// root outside it).
const forbiddenPath = "/usr/lib/warden-e2e-forbidden"

type harnessCase struct {
	name string
	// apiPath is appended to https://model.warden.test:PORT.
	apiPath string
	keyEnv  string
	args    []string
}

const prompt = "Run the steps the environment asks for."

var cases = []harnessCase{
	{
		name: "claude", apiPath: "", keyEnv: "ANTHROPIC_API_KEY",
		args: []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5"},
	},
	{
		name: "codex", apiPath: "/v1", keyEnv: "OPENAI_API_KEY",
		args: []string{"exec", "--json", "--skip-git-repo-check", "-m", "mock-model", prompt},
	},
	{
		name: "opencode", apiPath: "/v1", keyEnv: "OPENAI_API_KEY",
		args: []string{"run", "--format", "json", "--auto", prompt},
	},
	{
		name: "gemini", apiPath: "", keyEnv: "GEMINI_API_KEY",
		args: []string{"-p", prompt, "-o", "stream-json", "--yolo", "-m", "gemini-2.5-flash"},
	},
}

func TestHarnesses(t *testing.T) {
	npmBin := os.Getenv("WARDEN_E2E_BIN")
	if npmBin == "" {
		t.Fatal("WARDEN_E2E_BIN (the npm .bin directory holding the harnesses) is not set; run make e2e")
	}
	warden, _ := sandboxtest.Binaries(t)
	only := os.Getenv("WARDEN_E2E_ONLY")
	for _, hc := range cases {
		if only != "" && !strings.Contains(","+only+",", ","+hc.name+",") {
			continue
		}
		t.Run(hc.name, func(t *testing.T) { runHarness(t, warden, npmBin, hc) })
	}
}

// rig is one harness's machine: a fake $HOME with a git project, the mock
// model behind TLS, and a policy mapping the model's name to it.
type rig struct {
	base, home, work string
	secret, apiBase  string
	policyFile       string
	mock             *mockmodel.Server
}

func newRig(t *testing.T, hc harnessCase, script mockmodel.Script) *rig {
	return newRigBodies(t, hc, script, os.Getenv("WARDEN_E2E_BODIES") != "")
}

// newRigBodies is newRig, with the mock recording request bodies when
// bodies is set.
func newRigBodies(t *testing.T, hc harnessCase, script mockmodel.Script, bodies bool) *rig {
	t.Helper()
	r := &rig{base: outsideTmp(t)}
	r.home = filepath.Join(r.base, "home")
	r.work = filepath.Join(r.home, "src", "proj")
	mustMkdir(t, r.work)
	git(t, r.work, "init", "-q", "-b", "main")
	git(t, r.work, "remote", "add", "origin", "https://git.example.invalid/proj.git")

	r.secret = "sk-e2e-" + randHex(t, 16)
	caPEM, cert, err := mockmodel.SelfSigned(modelHost)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(r.base, "ca.pem")
	mustWrite(t, caFile, caPEM)
	r.mock = mockmodel.New(mockmodel.Options{Script: script, RequireKey: r.secret, RecordBodies: bodies})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r.mock, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.apiBase = fmt.Sprintf("https://%s:%d%s", modelHost, ln.Addr().(*net.TCPAddr).Port, hc.apiPath)

	r.policyFile = filepath.Join(r.base, "policy.yaml")
	mustWrite(t, r.policyFile, []byte(fmt.Sprintf(`version: 1
network:
  hosts:
    %s: 127.0.0.1
  allow_private_destinations: true
  upstream_roots: [%s]
tools:
  deny: ["Bash(git push*)"]
`, modelHost, caFile)))
	return r
}

// env is warden's environment: the harnesses on PATH and the model key,
// which warden injects at egress.
func (r *rig) env(npmBin string, hc harnessCase, term string) []string {
	return []string{
		"PATH=" + npmBin + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + r.home, "LANG=C.UTF-8", "TERM=" + term,
		hc.keyEnv + "=" + r.secret,
	}
}

func runHarness(t *testing.T, warden, npmBin string, hc harnessCase) {
	_ = os.Remove(forbiddenPath)
	t.Cleanup(func() { _ = os.Remove(forbiddenPath) })
	script := mockmodel.Script{
		Steps: []mockmodel.Step{
			{Command: "echo ran-inside > allowed.txt && for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done > env.txt; echo step-allowed-done"},
			{Command: "echo pwned > " + forbiddenPath + "; echo write-exit=$?"},
			{Command: "curl -sS -m 20 -o /dev/null https://example.com/; echo curl-exit=$?"},
			{Command: "git push origin main; touch pushed.txt"},
		},
		Final: "E2E done.",
	}
	rg := newRig(t, hc, script)
	home, work, secret, mock := rg.home, rg.work, rg.secret, rg.mock

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append([]string{"start", hc.name, "--policy", rg.policyFile, "--api-base", rg.apiBase, "--"}, hc.args...)
	cmd := exec.CommandContext(ctx, warden, args...)
	cmd.Dir = work
	cmd.Env = rg.env(npmBin, hc, "dumb")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	logTail(t, "warden start output", string(out))
	if err != nil {
		t.Fatalf("warden start %s: %v", hc.name, err)
	}

	reqs := mock.Requests()
	if dir := os.Getenv("WARDEN_E2E_BODIES"); dir != "" {
		for _, r := range reqs {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%02d.json", hc.name, r.Seq)), []byte(r.Path+"\n"+r.Body), 0o600)
		}
	}
	var results []string
	calls := 0
	for _, r := range reqs {
		if r.API == "" || r.Status == http.StatusUnauthorized {
			if r.Status == http.StatusUnauthorized {
				t.Errorf("request %s %s was refused by the mock: the key was not injected (%s)", r.Method, r.Path, r.Error)
			}
			continue
		}
		for name, c := range r.Credentials {
			if c.SHA256 != mockmodel.KeyHash(secret) {
				t.Errorf("request %s %s carried %s that is not the real key (the placeholder leaked through?)", r.Method, r.Path, name)
			}
		}
		if len(r.Credentials) == 0 {
			t.Errorf("request %s %s carried no credential", r.Method, r.Path)
		}
		if r.Turn == "tool_call" {
			calls++
		}
		results = append(results, r.ToolResults...)
	}
	all := strings.Join(results, "\n---\n")
	logTail(t, "tool results seen by the model", all)
	if calls < len(script.Steps) {
		t.Errorf("the model asked for %d tool calls, want %d", calls, len(script.Steps))
	}

	// 1. The allowed command ran inside the sandbox.
	if b, err := os.ReadFile(filepath.Join(work, "allowed.txt")); err != nil || string(b) != "ran-inside\n" {
		t.Errorf("allowed.txt = %q, %v; the allowed command did not run", b, err)
	}
	// 2. The forbidden write failed.
	if _, err := os.Stat(forbiddenPath); err == nil {
		t.Errorf("%s was created: the forbidden write escaped", forbiddenPath)
	}
	if !strings.Contains(all, "Read-only file system") {
		t.Error("the forbidden write's result does not say Read-only file system")
	}
	// 3. The forbidden network call failed at the proxy.
	if !strings.Contains(all, "403") {
		t.Error("the forbidden request's result does not show the proxy's 403")
	}
	audit, _ := os.ReadFile(filepath.Join(home, ".local", "state", "warden", "egress.jsonl"))
	if !strings.Contains(string(audit), "example.com") {
		t.Errorf("egress audit log has no decision for example.com:\n%s", audit)
	}
	// 4. The vetoed tool call was refused by the bridge and never ran.
	if _, err := os.Stat(filepath.Join(work, "pushed.txt")); err == nil {
		t.Error("pushed.txt exists: the vetoed tool call ran")
	}
	if !strings.Contains(all, "tools.deny") {
		t.Error("no tool result carries the bridge's tools.deny refusal")
	}
	// 5. The key was injected at egress and is nowhere inside.
	env, err := os.ReadFile(filepath.Join(work, "env.txt"))
	if err != nil {
		t.Fatalf("env.txt: %v", err)
	}
	if !strings.Contains(string(env), hc.keyEnv+"=warden-placeholder-") {
		t.Errorf("%s inside is not warden's placeholder", hc.keyEnv)
	}
	assertAbsent(t, secret, work, home)
}

// assertAbsent fails if secret appears in any file under the roots (the
// workdir and the managed harness home: everything the sandbox could
// write).
func assertAbsent(t *testing.T, secret string, roots ...string) {
	t.Helper()
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil && strings.Contains(string(b), secret) {
				t.Errorf("the model API key appears in %s", p)
			}
			return nil
		})
	}
}

func outsideTmp(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, cache)
	base, err := os.MkdirTemp(cache, "warden-e2e-") //nolint:usetesting // outside /tmp on purpose: the sandbox replaces /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() || os.Getenv("WARDEN_E2E_KEEP") == "" {
			_ = os.RemoveAll(base)
		}
	})
	return base
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// logTail logs the last lines of a long text.
func logTail(t *testing.T, what, s string) {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	t.Logf("%s (last %d lines):\n%s", what, len(lines), strings.Join(lines, "\n"))
}
