package launch

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/policy/policytest"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// TestLayersGolden records, for the same policies as the bwrap, Landlock and
// Seatbelt golden tests, what each Linux backend applies inside: the
// seccomp configuration and its BPF disassembly per architecture. (The
// Landlock rulesets of these policies are golden files of their own
// package.)
func TestLayersGolden(t *testing.T) {
	for name, tc := range policytest.Cases() {
		for _, backend := range []policy.Backend{policy.BackendBwrap, policy.BackendLandlock} {
			t.Run(name+"/"+string(backend), func(t *testing.T) {
				res := tc.Resolve(t)
				_, sc, err := Layers(res, backend)
				var b strings.Builder
				switch {
				case err != nil:
					b.WriteString("refused: " + err.Error() + "\n")
				default:
					b.WriteString("# seccomp config: AllowUnix=" + yes(sc.AllowUnix) + " DenyInet=" + yes(sc.DenyInet) + " DenySysVIPC=" + yes(sc.DenySysVIPC) + "\n")
					for _, arch := range []seccomp.Arch{seccomp.AMD64, seccomp.ARM64} {
						p, err := seccomp.Compile(*sc, arch)
						if err != nil {
							t.Fatal(err)
						}
						b.WriteString("# " + arch.String() + "\n" + p.Disassemble())
					}
				}
				golden := filepath.Join("testdata", name+"."+string(backend)+".bpf.golden")
				policytest.Golden(t, golden, b.String())
			})
		}
	}
}

func yes(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
