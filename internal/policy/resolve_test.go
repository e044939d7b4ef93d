package policy_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/policy/policytest"
)

func resolve(t *testing.T, yml string, h policy.Host, opt policy.ResolveOptions) (*policy.Resolved, error) {
	t.Helper()
	f, err := policy.Parse("t.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := policy.Merge(policy.MergeInput{Sources: []policy.Source{{Name: "builtin", File: policy.Builtin()}, {Name: "t.yaml", File: f}}})
	if err != nil {
		t.Fatal(err)
	}
	return policy.Resolve(spec, h, opt)
}

func paths(gs []policy.Grant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Path)
	}
	return out
}

func TestResolveDefaults(t *testing.T) {
	t.Parallel()
	r, err := resolve(t, "version: 1\n", policytest.Debian(), policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Workdir != "/home/dev/src/app" || r.Home != "/home/dev" || r.Mode != policy.ModeSandbox || r.Network.Mode != policy.NetBlocked {
		t.Errorf("basics: %+v", r)
	}
	if diff := cmp.Diff([]string{"/home/dev/src/app"}, paths(r.Write)); diff != "" {
		t.Errorf("write (-want +got):\n%s", diff)
	}
	for _, p := range paths(r.Read) {
		if strings.HasPrefix(p, "/home") {
			t.Errorf("$HOME path %s readable by default", p)
		}
	}
	prot := paths(r.Protect)
	for _, want := range []string{"/home/dev/src/app/.git/hooks", "/home/dev/src/app/.git/config", "/home/dev/src/app/.claude", "/home/dev/src/app/.mcp.json", "/home/dev/src/app/.vscode", "/home/dev/src/app/.envrc"} {
		if !slices.Contains(prot, want) {
			t.Errorf("%s not protected; protected: %v", want, prot)
		}
	}
	for _, g := range r.Protect {
		if g.Path == "/home/dev/src/app/.vscode" && g.Exists {
			t.Error(".vscode does not exist but is marked existing")
		}
	}
	if !slices.Contains(r.Pin, "/home/dev/src/app/.git") {
		t.Errorf(".git not pinned against rename: %v", r.Pin)
	}
	deny := paths(r.Deny)
	for _, want := range []string{"/etc/shadow", "/home/dev/src/app/.env", "/home/dev/src/app/.DS_Store"} {
		if !slices.Contains(deny, want) {
			t.Errorf("%s not denied; denied: %v", want, deny)
		}
	}
	if slices.Contains(deny, "/home/dev/src/app/.gitignore") || slices.Contains(deny, "/home/dev/src/app/.github") {
		t.Errorf("allow_hidden defaults masked: %v", deny)
	}
	wantEnv := []string{"HOME=/home/dev", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-256color", "TMPDIR=/tmp", "USER=dev"}
	if diff := cmp.Diff(wantEnv, r.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestResolveEnv(t *testing.T) {
	t.Parallel()
	r, err := resolve(t, "version: 1\nenv:\n  passthrough: [GOPATH, \"AWS_*\", LD_PRELOAD, SSH_AUTH_SOCK]\n  set: {FOO: bar}\n", policytest.Debian(), policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GOPATH=/home/dev/go", "AWS_SECRET_ACCESS_KEY=hunter2", "FOO=bar"} {
		if !slices.Contains(r.Env, want) {
			t.Errorf("%s missing from %v", want, r.Env)
		}
	}
	for _, kv := range r.Env {
		if strings.HasPrefix(kv, "LD_PRELOAD=") || strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			t.Errorf("danger blocklist lost to passthrough: %s", kv)
		}
	}
	_, err = resolve(t, "version: 1\nenv:\n  set: {LD_PRELOAD: /x.so}\n", policytest.Debian(), policy.ResolveOptions{})
	var ve *policy.ValidationError
	if !errors.As(err, &ve) || ve.Field != "env.set.LD_PRELOAD" {
		t.Errorf("env.set of a blocked name: err = %v", err)
	}
}

func TestResolveRefusals(t *testing.T) {
	t.Parallel()
	linked := policytest.Debian()
	linked.Links["/home/dev/src/app/.codex"] = "/tmp/decoy"
	root := policytest.Debian()
	root.Dir = "/"
	tests := []struct {
		name, yml string
		host      *policytest.Host
		field     string
	}{
		{"filtered network before the proxy exists", "version: 1\nnetwork: {mode: filtered}\n", policytest.Debian(), "network.mode"},
		{"write inside a secret", "version: 1\nwrite_paths: [~/.ssh]\n", policytest.Debian(), "write_paths"},
		{"read a denied path", "version: 1\nread_paths: [~/.aws]\ndeny_paths: [~/.aws]\n", policytest.Debian(), "read_paths"},
		{"unset variable", "version: 1\nread_paths: [$NOPE/x]\n", policytest.Debian(), "read_paths"},
		{"tilde user", "version: 1\nread_paths: [~root/x]\n", policytest.Debian(), "read_paths"},
		{"symlinked protected path", "version: 1\n", linked, "protected paths"},
		{"root workdir", "version: 1\n", root, "workdir"},
		{"write_paths on a file", "version: 1\nwrite_paths: [~/.bashrc]\n", policytest.Debian(), "write_paths"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolve(t, tc.yml, tc.host, policy.ResolveOptions{})
			var ve *policy.ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field {
				t.Fatalf("err = %v, want ValidationError on %s", err, tc.field)
			}
		})
	}
}

func TestResolveFilteredAllowedWhenSupported(t *testing.T) {
	t.Parallel()
	if _, err := resolve(t, "version: 1\nnetwork: {mode: filtered}\n", policytest.Debian(), policy.ResolveOptions{NetworkFiltered: true}); err != nil {
		t.Fatal(err)
	}
}

func TestResolveHomeWorkdir(t *testing.T) {
	t.Parallel()
	h := policytest.Debian()
	h.Dir = "/home/dev"
	r, err := resolve(t, "version: 1\n", h, policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prot := paths(r.Protect)
	for _, want := range []string{"/home/dev/.bashrc", "/home/dev/.gitconfig", "/home/dev/.zshrc"} {
		if !slices.Contains(prot, want) {
			t.Errorf("%s not protected when $HOME is writable", want)
		}
	}
	deny := paths(r.Deny)
	for _, want := range []string{"/home/dev/.ssh", "/home/dev/.aws"} {
		if !slices.Contains(deny, want) {
			t.Errorf("%s readable when $HOME is the workdir", want)
		}
	}
}

func TestResolvePathExpansion(t *testing.T) {
	t.Parallel()
	h := policytest.Debian()
	h.Links["/home/dev/go"] = "/opt/go"
	h.Dirs = append(h.Dirs, "/opt/go/pkg")
	r, err := resolve(t, "version: 1\nread_paths: [$GOPATH/pkg, \"${HOME}/.cargo/bin\", ./.github]\n", h, policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := paths(r.Read)
	for _, want := range []string{"/opt/go/pkg", "/home/dev/.cargo/bin", "/home/dev/src/app/.github"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not in read grants %v", want, got)
		}
	}
}

func TestResolveScratch(t *testing.T) {
	t.Parallel()
	r, err := resolve(t, "version: 1\nstart_in_scratch: true\n", policytest.Debian(), policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Write) != 0 || !slices.Contains(paths(r.Read), "/home/dev/src/app") {
		t.Errorf("scratch: workdir must be read-only: read %v write %v", paths(r.Read), paths(r.Write))
	}
}

func TestResolveOnUnknown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"default", "version: 1\nnetwork: {mode: filtered}\n", "deny"},
		{"ask", "version: 1\nnetwork: {mode: filtered, on_unknown: ask}\n", "ask"},
		{"deny", "version: 1\nnetwork: {mode: filtered, on_unknown: deny}\n", "deny"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := resolve(t, tc.in, policytest.Debian(), policy.ResolveOptions{NetworkFiltered: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Network.OnUnknown != tc.want {
				t.Errorf("network.on_unknown = %q, want %q", r.Network.OnUnknown, tc.want)
			}
		})
	}
	// Without the builtin layer the resolver still defaults to deny.
	spec, err := policy.Merge(policy.MergeInput{Sources: []policy.Source{{Name: "t.yaml", File: &policy.File{Version: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := policy.Resolve(spec, policytest.Debian(), policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Network.OnUnknown != "deny" {
		t.Errorf("bare default network.on_unknown = %q, want deny", r.Network.OnUnknown)
	}
}

// TestResolveStatePaths: a state path is writable, gets none of the
// project protections a write path gets.
func TestResolveStatePaths(t *testing.T) {
	t.Parallel()
	r, err := resolve(t, "version: 1\nstate_paths: [~/.cache]\nwrite_paths: [/opt]\n", policytest.Debian(), policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(paths(r.Write), "/home/dev/.cache") || !slices.Contains(paths(r.Write), "/opt") {
		t.Fatalf("write = %v", paths(r.Write))
	}
	prot := paths(r.Protect)
	for _, p := range prot {
		if strings.HasPrefix(p, "/home/dev/.cache/") {
			t.Errorf("state path got protection %s", p)
		}
	}
	if !slices.Contains(prot, "/opt/.git") || !slices.Contains(prot, "/opt/.claude") {
		t.Errorf("write path /opt lost its protections: %v", prot)
	}
}

// TestResolveWorkdirAsState: the workdir declared a state path gets no
// project placeholders (a sidecar's data dir).
func TestResolveWorkdirAsState(t *testing.T) {
	t.Parallel()
	r, err := resolve(t, "version: 1\nstate_paths: [./]\n", policytest.Debian(), policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths(r.Protect) {
		if strings.HasPrefix(p, "/home/dev/src/app/.") && !strings.HasPrefix(p, "/home/dev/src/app/.git/") {
			t.Errorf("state workdir got protection %s", p)
		}
	}
	if len(r.Write) == 0 || r.Write[0].Path != "/home/dev/src/app" || r.Write[0].Rule != "state_paths" {
		t.Errorf("write = %+v", r.Write)
	}
}
