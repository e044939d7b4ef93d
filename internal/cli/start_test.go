package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartUnknownHarness: an unknown harness exits 2 and names the
// supported ones.
func TestStartUnknownHarness(t *testing.T) {
	t.Parallel()
	f, _, errOut := testFactory()
	if code := Main(context.Background(), f, []string{"start", "aider"}); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, n := range []string{"opencode", "claude-code", "codex", "gemini", "cc", "oc"} {
		if !strings.Contains(errOut.String(), n) {
			t.Errorf("the error does not list %s: %s", n, errOut)
		}
	}
}

// TestStartArgs: the harness name comes before --, the harness's arguments
// after it.
func TestStartArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		harness string
		hargs   []string
		code    int
	}{
		{args: nil, harness: "", hargs: nil},
		{args: []string{"claude"}, harness: "claude"},
		{args: []string{"codex", "--", "exec", "hi"}, harness: "codex", hargs: []string{"exec", "hi"}},
		{args: []string{"--", "-p", "hi"}, harness: "", hargs: []string{"-p", "hi"}},
		{args: []string{"claude", "extra"}, code: 2},
		{args: []string{"a", "b", "--", "c"}, code: 2},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			f, _, _ := testFactory()
			var got *StartOptions
			cmd := NewCmdStart(f, func(o *StartOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(f.IO.ErrOut)
			cmd.SetErr(f.IO.ErrOut)
			err := cmd.Execute()
			if tc.code != 0 {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Harness != tc.harness || strings.Join(got.Args, "\x00") != strings.Join(tc.hargs, "\x00") {
				t.Errorf("harness %q args %q, want %q %q", got.Harness, got.Args, tc.harness, tc.hargs)
			}
		})
	}
}

// TestStartPrintPlan: --print-plan on a fake Codex install shows the
// binary, the managed home, the grants, the hosts, the key source (never
// the key), the bridge files and the command, and runs nothing.
func TestStartPrintPlan(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@openai", "codex")
	plat := filepath.Join(root, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin")
	for _, d := range []string{filepath.Join(pkg, "bin"), plat, filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@openai/codex","version":"0.169.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "bin", "codex.js"), []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true to stand in for codex: %v", err)
	}
	if err := os.WriteFile(filepath.Join(plat, "codex"), elf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(pkg, "bin", "codex.js"), filepath.Join(root, "bin", "codex")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("PATH", filepath.Join(root, "bin")+":/usr/bin:/bin")
	t.Setenv("WARDEN_KEYRING_BACKEND", "file")
	t.Setenv("WARDEN_KEYRING_PASSPHRASE", "")
	const key = "sk-test-never-printed"
	t.Setenv("OPENAI_API_KEY", key)
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)

	f, out, errOut := testFactory()
	if code := Main(context.Background(), f, []string{"start", "codex", "--print-plan", "--", "exec", "hi"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	plan := out.String()
	for _, want := range []string{
		"Codex CLI (codex), 0.169.0",
		filepath.Join(plat, "codex"),
		filepath.Join(home, "data", "warden-harness", "codex", "proj-"),
		"(state_paths)",
		"allow  api.openai.com, chatgpt.com, auth.openai.com",
		"OPENAI_API_KEY", "from the environment",
		"CODEX_HOME=",
		"/run/warden/harness/bridge.json",
		"config.toml", `sandbox_mode = "danger-full-access"`, "hooks.json", "__child hook claude pre-tool",
		"exec --dangerously-bypass-hook-trust hi",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan+errOut.String(), key) {
		t.Error("the plan shows the API key")
	}
}
