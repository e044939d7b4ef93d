// Package landlock compiles a resolved policy into a Landlock ruleset (pure,
// golden-tested on every OS) and applies it (Linux only). Under the bwrap
// backend it is defence in depth beneath the mount namespace; under the
// landlock backend it is the filesystem and network sandbox itself.
package landlock

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/policy"
)

// Access is a set of Landlock rights, by name.
type Access string

// Access sets.
const (
	// RO reads and executes files and lists directories beneath a path.
	RO Access = "ro"
	// RW is RO plus every write right and REFER (rename and link across
	// directories) beneath a path.
	RW Access = "rw"
	// ROFile and RWFile are the file rights only, for single files.
	ROFile Access = "ro-file"
	RWFile Access = "rw-file"
	// Dev is RWFile plus IOCTL_DEV, for terminals and /dev/null & co.
	Dev Access = "dev"
	// List only reads directories (names, not contents) beneath a path:
	// what is left of a tree whose entries are granted one by one.
	List Access = "list"
)

// PathRule grants Access beneath Path.
type PathRule struct {
	Path     string `json:"path"`
	Access   Access `json:"access"`
	Optional bool   `json:"optional,omitempty"` // skipped when missing
	Why      string `json:"why"`
}

// Ruleset is everything Landlock will enforce for one target.
type Ruleset struct {
	// MinABI is the lowest Landlock ABI that can enforce the ruleset.
	MinABI int `json:"min_abi"`
	// BestEffort allows a lower ABI, enforcing what it can (policy
	// `landlock: best-effort`).
	BestEffort bool       `json:"best_effort,omitempty"`
	FS         []PathRule `json:"fs"`
	// HandleNet restricts TCP connect/bind to the listed ports.
	HandleNet  bool     `json:"handle_net"`
	NetNote    string   `json:"net_note,omitempty"` // why the network is not handled
	ConnectTCP []uint16 `json:"connect_tcp,omitempty"`
	BindTCP    []uint16 `json:"bind_tcp,omitempty"`
	// Scoped are the IPC scopes: "abstract-unix-socket", "signal".
	Scoped []string `json:"scoped"`
}

// Options are the runtime facts the compiler needs.
type Options struct {
	// InSandbox is true under the bwrap backend, where the view has a
	// private /tmp and a throw-away $HOME; false for the landlock backend,
	// where the host filesystem is seen as is.
	InSandbox bool
	// TmpDir is the per-session temporary directory granted read-write
	// when not in a sandbox view (the landlock backend's private /tmp).
	TmpDir string
	// ConnectTCP and BindTCP are ports the target may use (warden's
	// in-sandbox bridges).
	ConnectTCP, BindTCP []uint16
	// SelfPath is where the warden binary is visible (read-only), and
	// ScratchPath the start_in_scratch directory, inside the sandbox view.
	SelfPath, ScratchPath string
}

// devFiles are the device nodes a program may use.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// Compile turns a resolved policy into a ruleset.
func Compile(p *policy.Resolved, opt Options) (*Ruleset, error) {
	if p == nil {
		return nil, fmt.Errorf("landlock: no policy")
	}
	rs := &Ruleset{MinABI: 6, Scoped: []string{"abstract-unix-socket", "signal"}, BestEffort: p.Landlock == policy.LayerBestEffort}
	add := func(path string, a Access, optional bool, why string) {
		for i, r := range rs.FS {
			if r.Path == path {
				if stronger(a, r.Access) {
					rs.FS[i].Access = a
					rs.FS[i].Why = why
				}
				return
			}
		}
		rs.FS = append(rs.FS, PathRule{Path: path, Access: a, Optional: optional, Why: why})
	}
	// Without a mount namespace to mask them, denied and protected paths
	// inside a granted tree are carved out: the tree keeps only List, and
	// each of its other entries is granted on its own.
	grant := func(g policy.Grant, a Access) { add(g.Path, a, false, g.Rule) }
	if !opt.InSandbox {
		c := carver{p: p, add: add}
		grant = c.grant
	}
	switch p.Mode {
	case policy.ModeRWX:
		add("/", RW, false, "mode rwx")
	case policy.ModeRX:
		if !opt.InSandbox {
			return nil, &policy.ValidationError{Field: "mode", Msg: "\"rx\" reads all of / except secrets, and masking secrets inside a readable / needs namespaces; use mode sandbox with read_paths, or the bwrap backend"}
		}
		add("/", RO, false, "mode rx")
	default:
		for _, g := range p.Read {
			grant(g, dirOr(g, RO, ROFile))
		}
		add("/proc", RO, false, "procfs")
		if opt.SelfPath != "" {
			add(opt.SelfPath, ROFile, false, "warden")
		}
	}
	for _, d := range devFiles {
		add(d, Dev, true, "device")
	}
	add("/dev/pts", Dev, true, "terminals")
	add("/dev/shm", RW, true, "shared memory")
	for _, g := range p.Write {
		grant(g, dirOr(g, RW, RWFile))
	}
	for _, g := range p.WriteFiles {
		add(g.Path, RWFile, false, g.Rule)
	}
	if len(p.UnixSockets) > 0 && !opt.InSandbox {
		// Without a mount namespace the socket family would be open to
		// every socket on the host: Landlock restricts connect(2) to
		// pathname sockets only from ABI 9.
		return nil, &policy.ValidationError{Field: "unix_sockets", Msg: "needs the bwrap backend: without a mount namespace, allowing one Unix socket would allow them all (Landlock confines connect(2) only from ABI 9)"}
	}
	for _, g := range p.UnixSockets {
		add(g.Path, RWFile, false, "unix_sockets")
	}
	if opt.InSandbox {
		add("/tmp", RW, false, "private /tmp")
		add("/var/tmp", RW, false, "private /var/tmp")
		if p.Mode == policy.ModeSandbox && p.Home != "" && p.Home != "/" {
			add(p.Home, RW, false, "throw-away $HOME")
		}
		if p.Scratch && opt.ScratchPath != "" {
			add(opt.ScratchPath, RW, false, "start_in_scratch")
		}
	} else if opt.TmpDir != "" {
		add(opt.TmpDir, RW, false, "private per-session TMPDIR")
	}
	// In a sandbox view the empty network namespace is the boundary, and
	// servers on the sandbox's own loopback (test suites) must keep working;
	// without one, Landlock's TCP rules are the boundary.
	switch {
	case p.Network.Mode == policy.NetOpen:
		rs.NetNote = "network: open"
	case opt.InSandbox:
		rs.NetNote = "the network namespace confines it"
	default:
		rs.HandleNet = true
		rs.ConnectTCP = slices.Clone(opt.ConnectTCP)
		rs.BindTCP = slices.Clone(opt.BindTCP)
	}
	slices.SortFunc(rs.FS, func(a, b PathRule) int { return strings.Compare(a.Path, b.Path) })
	return rs, nil
}

func fileAccess(a Access) Access {
	switch a {
	case RW:
		return RWFile
	case RO:
		return ROFile
	default:
		return a
	}
}

func dirOr(g policy.Grant, dir, file Access) Access {
	if g.Dir {
		return dir
	}
	return file
}

var strength = map[Access]int{List: 1, ROFile: 2, RO: 3, RWFile: 4, Dev: 5, RW: 6}

// carver grants a tree minus its denied and protected paths.
type carver struct {
	p   *policy.Resolved
	add func(path string, a Access, optional bool, why string)
}

func (c carver) status(path string) (denied, protected, ancestor bool) {
	for _, d := range c.p.Deny {
		if d.Path == path {
			denied = true
		}
		if strings.HasPrefix(d.Path, path+"/") {
			ancestor = true
		}
	}
	for _, d := range c.p.Protect {
		if d.Path == path {
			protected = true
		}
		if strings.HasPrefix(d.Path, path+"/") {
			ancestor = true
		}
	}
	return
}

func (c carver) grant(g policy.Grant, a Access) {
	denied, protected, ancestor := c.status(g.Path)
	switch {
	case denied:
		return
	case protected && (a == RW || a == RWFile):
		a = dirOr(g, RO, ROFile)
		if !ancestor {
			c.add(g.Path, a, false, g.Rule+" (protected: read-only)")
			return
		}
	}
	ents, listed := c.p.Listings[g.Path]
	if !ancestor || !g.Dir || !listed {
		c.add(g.Path, a, false, g.Rule)
		return
	}
	c.add(g.Path, List, false, g.Rule+" (entries granted one by one)")
	for _, e := range ents {
		ea := a
		if !e.Dir {
			ea = fileAccess(a)
		}
		c.grant(policy.Grant{Path: e.Path, Dir: e.Dir, Exists: true, Rule: g.Rule}, ea)
	}
}

func stronger(a, b Access) bool { return strength[a] > strength[b] }

// String renders the ruleset for golden files and --explain.
func (rs *Ruleset) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "abi >= %d", rs.MinABI)
	if rs.BestEffort {
		b.WriteString(" (best effort)")
	}
	b.WriteString("\n")
	for _, r := range rs.FS {
		opt := ""
		if r.Optional {
			opt = " (if present)"
		}
		fmt.Fprintf(&b, "fs %-7s %s%s  # %s\n", r.Access, r.Path, opt, r.Why)
	}
	if rs.HandleNet {
		fmt.Fprintf(&b, "net tcp connect %v bind %v (all other ports denied)\n", rs.ConnectTCP, rs.BindTCP)
	} else {
		fmt.Fprintf(&b, "net not handled by Landlock (%s)\n", rs.NetNote)
	}
	fmt.Fprintf(&b, "scoped %s\n", strings.Join(rs.Scoped, " "))
	return b.String()
}
