//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI returns the Landlock ABI version the running kernel supports, 0 when
// Landlock is unavailable, and why.
func ABI() (int, error) {
	const createRulesetVersion = 1 << 0
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(nil)), 0, createRulesetVersion) //nolint:gosec // G103: a NULL attribute pointer, as the ABI probe requires
	switch {
	case errno == 0:
		return int(v), nil
	case errors.Is(errno, syscall.ENOSYS):
		return 0, errors.New("landlock: the kernel was built without Landlock")
	case errors.Is(errno, syscall.EOPNOTSUPP):
		return 0, errors.New("landlock: Landlock is disabled at boot (add landlock to the lsm= kernel parameter)")
	default:
		return 0, fmt.Errorf("landlock: probe: %w", errno)
	}
}

var configs = map[int]ll.Config{1: ll.V1, 2: ll.V2, 3: ll.V3, 4: ll.V4, 5: ll.V5, 6: ll.V6, 7: ll.V7}

// Apply restricts the calling process (all threads) irreversibly. It
// fails when the kernel's ABI is below rs.MinABI, unless rs.BestEffort.
func Apply(rs *Ruleset) error {
	abi, err := ABI()
	if err != nil && !rs.BestEffort {
		return err
	}
	if abi < rs.MinABI && !rs.BestEffort {
		return fmt.Errorf("landlock: the policy needs Landlock ABI %d, the kernel has %d (set landlock: best-effort to accept less)", rs.MinABI, abi)
	}
	cfg, ok := configs[rs.MinABI]
	if !ok {
		return fmt.Errorf("landlock: unsupported ABI %d", rs.MinABI)
	}
	if rs.BestEffort {
		cfg = cfg.BestEffort()
	}
	var fsRules []ll.Rule
	for _, r := range rs.FS {
		var rule ll.FSRule
		switch r.Access {
		case RO:
			rule = ll.RODirs(r.Path)
		case RW:
			rule = ll.RWDirs(r.Path).WithRefer()
		case ROFile:
			rule = ll.ROFiles(r.Path)
		case RWFile:
			rule = ll.RWFiles(r.Path)
		case Dev:
			rule = ll.RWFiles(r.Path).WithIoctlDev()
		case List:
			rule = ll.PathAccess(ll.AccessFSSet(llsys.AccessFSReadDir), r.Path)
		default:
			return fmt.Errorf("landlock: unknown access %q", r.Access)
		}
		if r.Optional {
			rule = rule.IgnoreIfMissing()
		}
		fsRules = append(fsRules, rule)
	}
	// One ruleset, one layer: filesystem, network (when handled) and scopes.
	if !rs.HandleNet {
		cfg.HandledAccessNet = 0
	}
	if len(rs.Scoped) == 0 {
		cfg.Scoped = 0
	}
	rules := fsRules
	if rs.HandleNet {
		for _, p := range rs.ConnectTCP {
			rules = append(rules, ll.ConnectTCP(p))
		}
		for _, p := range rs.BindTCP {
			rules = append(rules, ll.BindTCP(p))
		}
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}
