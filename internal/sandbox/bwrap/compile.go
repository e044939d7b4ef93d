package bwrap

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
)

// Options are the runner-supplied parts of the argv.
type Options struct {
	// StatusFD, when > 0, is passed as --json-status-fd so the runner can
	// tell bubblewrap's own failures from the child's exit status.
	StatusFD int
}

type opKind int

// Mount operations, in the order they apply to one path.
const (
	opProc opKind = iota
	opDev
	opTmpfs
	opSymlink
	opRO
	opRW
	opPin
	opProtect
	opMaskDir
	opMaskFile
	opSelf
)

type op struct {
	kind opKind
	path string
	src  string
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// Compile turns a launch spec into bubblewrap's argv (without the bwrap
// binary itself). It is pure: the same Spec always gives the same argv.
func Compile(s *sandbox.Spec, opt Options) ([]string, error) {
	p := s.Policy
	if p == nil {
		return nil, errors.New("bwrap: no policy")
	}
	if len(s.Argv) == 0 {
		return nil, errors.New("bwrap: no command")
	}
	if s.Self == "" || !filepath.IsAbs(s.Self) {
		return nil, errors.New("bwrap: warden binary path must be absolute")
	}
	args := []string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	switch p.Network.Mode {
	case policy.NetBlocked:
		args = append(args, "--unshare-net")
	case policy.NetFiltered:
		// An empty namespace; PID 1 relays its loopback proxy port to the
		// egress socket bound in from the host.
		if len(s.Relays) == 0 {
			return nil, errors.New("bwrap: network filtered needs the egress relay")
		}
		args = append(args, "--unshare-net")
	case policy.NetOpen:
		// The host network namespace is shared on purpose.
	default:
		return nil, fmt.Errorf("bwrap: network mode %q is not supported by this backend", p.Network.Mode)
	}
	args = append(args,
		"--die-with-parent", "--new-session", "--as-pid-1",
		"--cap-drop", "ALL",
		"--disable-userns",
		"--hostname", "warden",
		"--clearenv",
	)
	if opt.StatusFD > 0 {
		args = append(args, "--json-status-fd", fmt.Sprint(opt.StatusFD))
	}

	var ops []op
	add := func(k opKind, path, src string) { ops = append(ops, op{kind: k, path: path, src: src}) }
	switch p.Mode {
	case policy.ModeRWX:
		add(opRW, "/", "/")
	case policy.ModeRX:
		add(opRO, "/", "/")
	default:
		for _, l := range p.Symlinks {
			add(opSymlink, l.Path, l.Target)
		}
		if p.Home != "" && p.Home != "/" {
			add(opTmpfs, p.Home, "")
		}
	}
	add(opProc, "/proc", "")
	add(opDev, "/dev", "")
	add(opTmpfs, "/dev/shm", "")
	if p.Mode != policy.ModeRWX {
		add(opTmpfs, "/tmp", "")
		add(opTmpfs, "/var/tmp", "")
	}
	add(opTmpfs, "/run", "")
	for _, g := range p.Read {
		if g.Path != "/" {
			add(opRO, g.Path, g.Path)
		}
	}
	for _, g := range p.Write {
		if g.Path != "/" {
			add(opRW, g.Path, g.Path)
		}
	}
	for _, g := range p.WriteFiles {
		add(opRW, g.Path, g.Path)
	}
	for _, d := range p.Pin {
		add(opPin, d, d)
	}
	denied := map[string]bool{}
	for _, g := range p.Deny {
		denied[g.Path] = true
	}
	for _, g := range p.Protect {
		if !denied[g.Path] { // a mask already hides it, and is read-only
			add(opProtect, g.Path, g.Path)
		}
	}
	for _, g := range p.Deny {
		if g.Dir {
			add(opMaskDir, g.Path, "")
		} else {
			if s.DenyFile == "" {
				return nil, errors.New("bwrap: policy masks files but no deny file was prepared")
			}
			add(opMaskFile, g.Path, s.DenyFile)
		}
	}
	if p.Scratch {
		add(opTmpfs, sandbox.InnerScratch, "")
	}
	add(opSelf, sandbox.InnerSelf, s.Self)
	for _, g := range p.UnixSockets {
		add(opSelf, g.Path, g.Path) // a read-only bind does not stop connect(2); that is the point
	}
	for _, b := range s.Binds {
		if b.RW {
			add(opRW, b.Dst, b.Src)
		} else {
			add(opSelf, b.Dst, b.Src)
		}
	}

	// Parents before children; at one path, the later kinds win.
	slices.SortStableFunc(ops, func(a, b op) int {
		if da, db := depth(a.path), depth(b.path); da != db {
			return da - db
		}
		if a.path != b.path {
			return strings.Compare(a.path, b.path)
		}
		return int(a.kind) - int(b.kind)
	})
	for _, o := range ops {
		switch o.kind {
		case opProc:
			args = append(args, "--proc", o.path)
		case opDev:
			args = append(args, "--dev", o.path)
		case opTmpfs:
			args = append(args, "--tmpfs", o.path)
		case opSymlink:
			args = append(args, "--symlink", o.src, o.path)
		case opRO, opProtect:
			args = append(args, "--ro-bind", o.src, o.path)
		case opRW, opPin:
			args = append(args, "--bind", o.src, o.path)
		case opMaskDir:
			args = append(args, "--perms", "0000", "--tmpfs", o.path, "--remount-ro", o.path)
		case opMaskFile, opSelf:
			args = append(args, "--ro-bind", o.src, o.path)
		}
	}
	dir := s.StartDir()
	if p.Scratch {
		dir = sandbox.InnerScratch
	}
	args = append(args, "--chdir", dir, "--", sandbox.InnerSelf, "__child", "init")
	return args, nil
}
