package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/egress/prompt"
	"github.com/wardenhq/warden/internal/secrets"
)

func testFactory() (*Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &Factory{IO: &cliutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}}, &out, &errOut
}

// TestCommandTree checks that every command has help text and an example,
// and that every flag is kebab-case (tailscale TestShortUsage).
func TestCommandTree(t *testing.T) {
	t.Parallel()
	f, _, _ := testFactory()
	kebab := regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if c.Short == "" {
			t.Errorf("%s: no short help", c.CommandPath())
		}
		if c.Runnable() && c.Example == "" {
			t.Errorf("%s: no example", c.CommandPath())
		}
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if !kebab.MatchString(fl.Name) {
				t.Errorf("%s: flag --%s is not kebab-case", c.CommandPath(), fl.Name)
			}
			if fl.Usage == "" {
				t.Errorf("%s: flag --%s has no usage", c.CommandPath(), fl.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(f))
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	cycle := filepath.Join(dir, "cycle.yaml")
	for p, c := range map[string]string{
		good:  "version: 1\nmode: rx\nprofiles:\n  a: {extends: strict}\n",
		bad:   "version: 1\nmode: rx\nnetwork:\n  mode: sideways\n  alow: []\n",
		cycle: "version: 1\nprofiles:\n  a: {extends: b}\n  b: {extends: a}\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"version", []string{"version"}, 0, ""},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", []string{"run", "--frob", "--", "true"}, 2, "unknown flag"},
		{"bad mode flag", []string{"run", "--mode", "yolo", "--", "true"}, 2, "--mode"},
		{"run needs a command", []string{"run"}, 2, "run needs a command"},
		{"check good", []string{"policy", "check", good}, 0, ""},
		{"check bad", []string{"policy", "check", bad}, 3, "bad.yaml:4"},
		{"check cycle", []string{"policy", "check", cycle}, 3, "cycle"},
		{"check missing", []string{"policy", "check", filepath.Join(dir, "nope.yaml")}, 3, "no such file"},
		{"landlock refuses rx", []string{"run", "--mode", "rx", "--backend", "landlock", "--explain", "--", "true"}, 125, "mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, errOut := testFactory()
			code := Main(context.Background(), f, tc.args)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut.String(), tc.inStderr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.inStderr)
			}
		})
	}
}

func TestCheckReportsEveryErrorWithLines(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(p, []byte("version: 1\nmode: x\nbackend: y\nfoo: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, errOut := testFactory()
	if code := Main(context.Background(), f, []string{"policy", "check", p}); code != 3 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"p.yaml:4: unknown key \"foo\""} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestPolicyShowSources(t *testing.T) {
	t.Parallel()
	f, out, errOut := testFactory()
	if code := Main(context.Background(), f, []string{"policy", "show", "--profile", "strict"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "start_in_scratch") || !strings.Contains(out.String(), "profile strict (builtin)") {
		t.Errorf("show output lacks provenance:\n%s", out)
	}
}

func TestNetWhy(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(p, []byte("version: 1\nnetwork:\n  mode: filtered\n  allow: [\"*.github.com:443\"]\n  deny: [gist.github.com]\n  rules: [\"GET api.github.com/repos/myorg/**\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"raw.github.com"}, `ALLOWED GET raw.github.com:443/ — host-allowed (rule "*.github.com:443")`},
		{[]string{"gist.github.com"}, "DENIED GET gist.github.com:443/ — host-denied"},
		{[]string{"evilgithub.com"}, "DENIED GET evilgithub.com:443/ — host-not-allowed"},
		{[]string{"api.github.com", "--path", "/repos/myorg/x"}, "ALLOWED GET api.github.com:443/repos/myorg/x"},
		{[]string{"api.github.com", "--path", "/repos/other/x"}, "DENIED GET api.github.com:443/repos/other/x — path-not-allowed"},
		{[]string{"api.github.com", "--method", "POST", "--path", "/repos/myorg/x"}, "DENIED POST api.github.com:443/repos/myorg/x — method-not-allowed"},
	} {
		f, out, errOut := testFactory()
		if code := Main(context.Background(), f, append([]string{"net", "why", "--policy", p}, tc.args...)); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v:\n got %s\nwant %s", tc.args, out, tc.want)
		}
	}
}

func TestSecretCommands(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("WARDEN_KEYRING_BACKEND", "file")
	t.Setenv("WARDEN_KEYRING_PASSPHRASE", "test")
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		f := &Factory{IO: &cliutil.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}}
		return Main(context.Background(), f, args), out.String(), errOut.String()
	}
	if code, _, e := run("hunter2\n", "secret", "set", "net", "tok"); code != 0 || strings.Contains(e, "hunter2") {
		t.Fatalf("set: %d %s", code, e)
	}
	if code, _, e := run("X=1\nY=2\n", "secret", "import", "net", "-"); code != 0 {
		t.Fatalf("import: %d %s", code, e)
	}
	code, out, _ := run("", "secret", "list", "net")
	if code != 0 || strings.Contains(out, "hunter2") || !strings.Contains(out, "tok\t"+secrets.NewString("hunter2").Fingerprint()) || !strings.Contains(out, "X\t") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if code, _, _ := run("", "secret", "unset", "net", "tok"); code != 0 {
		t.Fatal("unset failed")
	}
	if code, _, _ := run("", "secret", "unset", "net", "tok"); code != 9 {
		t.Fatalf("unset of a missing secret: exit %d, want 9", code)
	}
	if code, _, _ := run("", "secret", "set", "Bad Scope", "x"); code != 2 {
		t.Fatalf("bad scope: exit %d, want 2", code)
	}
}

func TestNetLearnedForget(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	run := func(args ...string) (int, string, string) {
		f, out, errOut := testFactory()
		return Main(context.Background(), f, args), out.String(), errOut.String()
	}
	if code, out, e := run("net", "learned"); code != 0 || out != "" || !strings.Contains(e, "no learned decisions") {
		t.Fatalf("empty: %d %q %q", code, out, e)
	}
	if code, out, _ := run("net", "learned", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty --json: %d %q", code, out)
	}
	path := filepath.Join(cfg, "warden", "learned-network.yaml")
	l, err := prompt.OpenLearned(path)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, e := range []prompt.Entry{
		{Host: "a.test", Port: 443, Decision: prompt.Allow, Scope: "/src/app", Time: when},
		{Host: "a.test", Port: 8443, Decision: prompt.Deny, Time: when},
		{Host: "::1", Port: 80, Decision: prompt.Allow, Time: when},
	} {
		if err := l.Remember(e); err != nil {
			t.Fatal(err)
		}
	}
	code, out, e := run("net", "learned")
	want := "allow [::1]:80 scope=global time=2025-06-01T12:00:00Z\n" +
		"allow a.test:443 scope=/src/app time=2025-06-01T12:00:00Z\n" +
		"deny  a.test:8443 scope=global time=2025-06-01T12:00:00Z\n"
	if code != 0 || out != want {
		t.Fatalf("learned: %d %s\n got %q\nwant %q", code, e, out, want)
	}
	code, out, _ = run("net", "learned", "--json")
	var got []prompt.Entry
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 3 || got[1].Scope != "/src/app" {
		t.Fatalf("learned --json: %d %v %s", code, err, out)
	}
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"A.test:443"}, 0, "forgot allow a.test:443 scope=/src/app\n"},
		{[]string{"a.test:443"}, 1, ""},
		{[]string{"[::1]"}, 0, "forgot allow [::1]:80 scope=global\n"},
		{[]string{"a.test"}, 0, "forgot deny a.test:8443 scope=global\n"},
		{[]string{"bad host"}, 2, ""},
		{[]string{"a.test:0"}, 2, ""},
	}
	for _, tc := range tests {
		code, out, e := run(append([]string{"net", "forget"}, tc.args...)...)
		if code != tc.wantCode || out != tc.wantOut {
			t.Errorf("forget %v: %d %q (stderr %q); want %d %q", tc.args, code, out, e, tc.wantCode, tc.wantOut)
		}
	}
	if code, out, _ := run("net", "learned"); code != 0 || out != "" {
		t.Errorf("after forgetting everything: %d %q", code, out)
	}
	if err := os.WriteFile(path, []byte("version: 1\ndecisions: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, e := run("net", "learned"); code != 3 || !strings.Contains(e, path) {
		t.Errorf("broken file: exit %d %q, want 3 naming the file", code, e)
	}
}
