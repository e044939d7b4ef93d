//go:build !linux

package sandbox

import (
	"context"
	"os"
	"runtime"
)

// ProbeOptions tune ProbeHost.
type ProbeOptions struct {
	Full        bool
	LandlockABI func() (int, error)
}

// ProbeHost inspects the running machine.
func ProbeHost(context.Context, ProbeOptions) *Probe {
	p := &Probe{OS: runtime.GOOS, Arch: runtime.GOARCH}
	no := Feature{Reason: "Linux only"}
	p.Bwrap, p.UserNS, p.Landlock, p.Seccomp, p.CgroupV2 = no, no, no, no, no
	if runtime.GOOS == "darwin" {
		if _, err := os.Stat("/usr/bin/sandbox-exec"); err == nil {
			p.Seatbelt = Feature{Usable: true, Detail: "/usr/bin/sandbox-exec"}
		} else {
			p.Seatbelt = Feature{Reason: "sandbox-exec not found"}
		}
	}
	return p
}
