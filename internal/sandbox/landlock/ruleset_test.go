package landlock

import (
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/policy/policytest"
)

func TestCompileGolden(t *testing.T) {
	for name, tc := range policytest.Cases() {
		for _, mode := range []struct {
			suffix string
			opt    Options
		}{
			{"", Options{InSandbox: true, SelfPath: "/run/warden/warden", ScratchPath: "/scratch"}},
			{".landlock-backend", Options{TmpDir: "/run/user/1000/warden/s-1/tmp", ConnectTCP: []uint16{41000}}},
		} {
			t.Run(name+mode.suffix, func(t *testing.T) {
				var got string
				rs, err := Compile(tc.Resolve(t), mode.opt)
				switch {
				case err != nil && mode.suffix != "":
					got = "refused: " + err.Error() + "\n"
				case err != nil:
					t.Fatal(err)
				default:
					got = rs.String()
				}
				golden := filepath.Join("testdata", name+mode.suffix+".golden")
				policytest.Golden(t, golden, got)
			})
		}
	}
}

func TestCompileInvariants(t *testing.T) {
	for name, tc := range policytest.Cases() {
		t.Run(name, func(t *testing.T) {
			res := tc.Resolve(t)
			rs, err := Compile(res, Options{InSandbox: true})
			if err != nil {
				t.Fatal(err)
			}
			if rs.MinABI < 6 || len(rs.Scoped) != 2 {
				t.Errorf("scopes (abstract unix sockets, signals) must always apply: %+v", rs)
			}
			for _, r := range rs.FS {
				if res.Mode == policy.ModeSandbox && (r.Access == RW) {
					ok := false
					for _, w := range res.Write {
						if r.Path == w.Path {
							ok = true
						}
					}
					switch r.Path {
					case "/tmp", "/var/tmp", "/dev/shm", res.Home, "/scratch":
						ok = true
					}
					if !ok {
						t.Errorf("%s writable but not granted", r.Path)
					}
				}
				for _, d := range res.Deny {
					if r.Path == d.Path {
						t.Errorf("denied %s has a rule", d.Path)
					}
				}
			}
			nb, err := Compile(res, Options{})
			if res.Mode == policy.ModeRX {
				if err == nil {
					t.Error("rx must be refused without namespaces")
				}
				return
			}
			if res.Network.Mode != policy.NetOpen && !nb.HandleNet {
				t.Error("without a network namespace, TCP must be handled")
			}
		})
	}
}
