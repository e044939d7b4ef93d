package policytest

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/policy"
)

// Case is one golden-test policy on one fake machine.
type Case struct {
	YAML string
	Host func() *Host
}

// Cases are the policies every backend's golden tests compile, so that the
// bwrap argv, Landlock ruleset and Seatbelt profile of one policy can be
// read side by side.
func Cases() map[string]Case {
	return map[string]Case{
		"default": {YAML: "version: 1\n", Host: Debian},
		"grants": {YAML: `version: 1
read_paths: [~/.cargo/bin, /nonexistent]
write_paths: [~/.cache]
deny_paths: [./secrets.txt]
allow_hidden: [.venv]
env:
  passthrough: [GOPATH, AWS_*]
  set: {FOO: bar}
limits: {processes: 256, memory: 2GiB}
`, Host: func() *Host {
			h := Debian()
			h.Files["/home/dev/src/app/secrets.txt"] = "s"
			return h
		}},
		"rx":      {YAML: "version: 1\nmode: rx\n", Host: Debian},
		"rwx":     {YAML: "version: 1\nmode: rwx\n", Host: Debian},
		"scratch": {YAML: "version: 1\nstart_in_scratch: true\n", Host: Debian},
		"net-open": {YAML: "version: 1\nnetwork: {mode: open}\n", Host: func() *Host {
			h := Debian()
			delete(h.Files, "/etc/resolv.conf")
			h.Links["/etc/resolv.conf"] = "../run/systemd/resolve/stub-resolv.conf"
			h.Files["/run/systemd/resolve/stub-resolv.conf"] = "nameserver 127.0.0.53"
			return h
		}},
		"worktree": {YAML: "version: 1\n", Host: func() *Host {
			h := Debian()
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
		"home-workdir": {YAML: "version: 1\n", Host: func() *Host {
			h := Debian()
			h.Dir = "/home/dev"
			return h
		}},
	}
}

// Resolve parses, merges (over the built-in defaults) and resolves c.
func (c Case) Resolve(t testing.TB) *policy.Resolved {
	t.Helper()
	f, err := policy.Parse("test.yaml", []byte(c.YAML))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := policy.Merge(policy.MergeInput{Sources: []policy.Source{{Name: "builtin", File: policy.Builtin()}, {Name: "test", File: f}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := policy.Resolve(spec, c.Host(), policy.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
