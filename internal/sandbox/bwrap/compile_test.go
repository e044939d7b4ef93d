package bwrap

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/policy/policytest"
	"github.com/wardenhq/warden/internal/sandbox"
)

func TestCompileGolden(t *testing.T) {
	for name, tc := range policytest.Cases() {
		t.Run(name, func(t *testing.T) {
			res := tc.Resolve(t)
			args, err := Compile(&sandbox.Spec{Policy: res, Argv: []string{"true"}, Self: "/usr/local/bin/warden", DenyFile: "/run/user/1000/warden/s-1/deny"}, Options{StatusFD: 4})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(args, "\n") + "\n"
			golden := filepath.Join("testdata", name+".golden")
			policytest.Golden(t, golden, got)
		})
	}
}

// TestCompileInvariants checks properties every compiled argv must have,
// whatever the policy.
func TestCompileInvariants(t *testing.T) {
	for name, tc := range policytest.Cases() {
		t.Run(name, func(t *testing.T) {
			res := tc.Resolve(t)
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
	res := policytest.Cases()["default"].Resolve(t)
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
