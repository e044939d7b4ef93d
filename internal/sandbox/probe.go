package sandbox

import "github.com/wardenhq/warden/internal/policy"

// Feature is one capability of the machine as a probe saw it.
type Feature struct {
	Usable bool   `json:"usable"`
	Detail string `json:"detail,omitempty"` // version, ABI, path
	Reason string `json:"reason,omitempty"` // why not usable
	Fix    string `json:"fix,omitempty"`    // what would make it usable
}

// Probe is what the sandbox layers can rely on here. Choices read the
// probe, never scattered runtime.GOOS checks.
type Probe struct {
	OS       string  `json:"os"`
	Arch     string  `json:"arch"`
	Kernel   string  `json:"kernel,omitempty"`
	Bwrap    Feature `json:"bwrap"`
	UserNS   Feature `json:"user_namespaces"`
	Landlock Feature `json:"landlock"`
	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int     `json:"landlock_abi"`
	Seccomp     Feature `json:"seccomp"`
	CgroupV2    Feature `json:"cgroup_v2_delegation"`
	Seatbelt    Feature `json:"seatbelt,omitzero"`
}

// Auto is the backend `auto` picks on this machine, and why; "" when none
// can run.
func (p *Probe) Auto() (policy.Backend, string) {
	switch {
	case p.Bwrap.Usable && p.UserNS.Usable && p.Seccomp.Usable:
		return policy.BackendBwrap, "bubblewrap and user namespaces are usable"
	case p.Landlock.Usable && p.LandlockABI >= 6 && p.Seccomp.Usable:
		why := "user namespaces are unavailable"
		if !p.Bwrap.Usable {
			why = "bubblewrap is not installed"
		}
		return policy.BackendLandlock, why + "; Landlock ABI " + itoa(p.LandlockABI) + " and seccomp enforce the policy without namespaces"
	case p.Seatbelt.Usable:
		return policy.BackendSeatbelt, "macOS Seatbelt"
	}
	return "", "no sandbox mechanism is usable here"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
