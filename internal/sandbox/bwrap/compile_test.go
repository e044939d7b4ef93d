package bwrap

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/policy/policytest"
	"github.com/wardenhq/warden/internal/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden files")

// GoldenCases are the policies every backend's golden tests compile.
func goldenCases() map[string]struct {
	yaml string
	host func() *policytest.Host
} {
	return map[string]struct {
		yaml string
		host func() *policytest.Host
	}{
		"default": {yaml: "version: 1\n", host: policytest.Debian},
		"grants": {yaml: `version: 1
read_paths: [~/.cargo/bin, /nonexistent]
write_paths: [~/.cache]
deny_paths: [./secrets.txt]
allow_hidden: [.venv]
env:
  passthrough: [GOPATH, AWS_*]
  set: {FOO: bar}
limits: {processes: 256, memory: 2GiB}
`, host: func() *policytest.Host {
			h := policytest.Debian()
			h.Files["/home/dev/src/app/secrets.txt"] = "s"
			return h
		}},
		"rx":      {yaml: "version: 1\nmode: rx\n", host: policytest.Debian},
		"rwx":     {yaml: "version: 1\nmode: rwx\n", host: policytest.Debian},
		"scratch": {yaml: "version: 1\nstart_in_scratch: true\n", host: policytest.Debian},
		"net-open": {yaml: "version: 1\nnetwork: {mode: open}\n", host: func() *policytest.Host {
			h := policytest.Debian()
			delete(h.Files, "/etc/resolv.conf")
			h.Links["/etc/resolv.conf"] = "../run/systemd/resolve/stub-resolv.conf"
			h.Files["/run/systemd/resolve/stub-resolv.conf"] = "nameserver 127.0.0.53"
			return h
		}},
		"worktree": {yaml: "version: 1\n", host: func() *policytest.Host {
			h := policytest.Debian()
			for k := range h.Files {
				if strings.HasPrefix(k, "/home/dev/src/app/.git/") {
					delete(h.Files, k)
				}
			}
			h.Dirs = []string{"/usr/bin", "/etc", "/home/dev/src/main/.git/hooks", "/home/dev/src/main/.git/modules/lib/hooks"}
			h.Files["/home/dev/src/app/.git"] = "gitdir: ../main/.git/worktrees/app\n"
			h.Files["/home/dev/src/main/.git/worktrees/app/commondir"] = "../..\n"
			h.Files["/home/dev/src/main/.git/worktrees/app/HEAD"] = ""
			h.Files["/home/dev/src/main/.git/config"] = ""
			h.Files["/home/dev/src/main/.git/modules/lib/HEAD"] = ""
			h.Files["/home/dev/src/main/.git/modules/lib/config"] = ""
			return h
		}},
		"home-workdir": {yaml: "version: 1\n", host: func() *policytest.Host {
			h := policytest.Debian()
			h.Dir = "/home/dev"
			return h
		}},
	}
}

func resolveCase(t *testing.T, yml string, h *policytest.Host) *policy.Resolved {
	t.Helper()
	f, err := policy.Parse("test.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := policy.Merge(policy.MergeInput{Sources: []policy.Source{{Name: "builtin", File: policy.Builtin()}, {Name: "test", File: f}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := policy.Resolve(spec, h, policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCompileGolden(t *testing.T) {
	for name, tc := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			res := resolveCase(t, tc.yaml, tc.host())
			args, err := Compile(&sandbox.Spec{Policy: res, Argv: []string{"true"}, Self: "/usr/local/bin/warden", DenyFile: "/run/user/1000/warden/s-1/deny"}, Options{StatusFD: 4})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(args, "\n") + "\n"
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("argv mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompileInvariants checks properties every compiled argv must have,
// whatever the policy.
func TestCompileInvariants(t *testing.T) {
	for name, tc := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			res := resolveCase(t, tc.yaml, tc.host())
			args, err := Compile(&sandbox.Spec{Policy: res, Argv: []string{"true"}, Self: "/w", DenyFile: "/d"}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			joined := " " + strings.Join(args, " ") + " "
			for _, must := range []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session", "--disable-userns", "--cap-drop ALL", "--clearenv", "--proc /proc", "--dev /dev", "--tmpfs /run"} {
				if !strings.Contains(joined, " "+must+" ") {
					t.Errorf("argv lacks %q", must)
				}
			}
			if res.Network.Mode == policy.NetBlocked && !strings.Contains(joined, " --unshare-net ") {
				t.Error("blocked network without --unshare-net")
			}
			if res.Mode != policy.ModeRWX && !strings.Contains(joined, " --tmpfs /tmp ") {
				t.Error("no private /tmp")
			}
			for _, kv := range res.Env {
				if strings.Contains(joined, kv) {
					t.Errorf("environment %q leaked into argv", kv)
				}
			}
			// Every mount target appears after its parent's mount.
			seen := map[string]int{}
			for i := 0; i+2 < len(args); i++ {
				switch args[i] {
				case "--bind", "--ro-bind":
					seen[args[i+2]] = i
				}
			}
			for dst, i := range seen {
				for parent, j := range seen {
					if parent != dst && strings.HasPrefix(dst, parent+"/") && j > i {
						t.Errorf("%s mounted before its parent %s", dst, parent)
					}
				}
			}
		})
	}
}

func TestCompileRejects(t *testing.T) {
	res := resolveCase(t, "version: 1\n", policytest.Debian())
	for name, s := range map[string]*sandbox.Spec{
		"no command":    {Policy: res, Self: "/w", DenyFile: "/d"},
		"relative self": {Policy: res, Argv: []string{"x"}, Self: "w", DenyFile: "/d"},
		"no deny file":  {Policy: res, Argv: []string{"x"}, Self: "/w"},
		"no policy":     {Argv: []string{"x"}, Self: "/w"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Compile(s, Options{}); err == nil {
				t.Fatal("Compile succeeded")
			}
		})
	}
}
