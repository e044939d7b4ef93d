package policy

import (
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Host is the view of the machine that Resolve needs. The os-backed
// implementation lives with the caller; tests use a fake.
type Host interface {
	Home() string
	Workdir() string
	LookupEnv(name string) (string, bool)
	Environ() []string
	EvalSymlinks(path string) (string, error)
	Lstat(path string) (fs.FileInfo, error)
	Readlink(path string) (string, error)
	ReadDir(path string) ([]fs.DirEntry, error)
	ReadFile(path string) ([]byte, error)
	// Readable reports whether the current user could read path at all
	// (file permissions). Unreadable system secrets need no mask.
	Readable(path string) bool
}

// Grant is one path in a resolved policy.
type Grant struct {
	Path   string `json:"path"`
	Dir    bool   `json:"dir"`
	Exists bool   `json:"exists"`
	Rule   string `json:"rule"` // why: the field or built-in list that put it here
}

// Symlink is a system path that is a symlink on the host (e.g. /bin ->
// usr/bin on merged-/usr systems) and is recreated as one.
type Symlink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Resolved is a policy provisioned against one host and workdir: every path
// absolute and symlink-resolved, every protected path found. It is what the
// backends compile.
type Resolved struct {
	Mode    Mode    `json:"mode"`
	Backend Backend `json:"backend"`
	// Landlock says whether the Landlock layer may be best effort.
	Landlock LayerMode `json:"landlock"`
	Workdir  string    `json:"workdir"`
	Home     string    `json:"home"`
	Scratch  bool      `json:"start_in_scratch"`

	// Read are readable trees; Write writable trees; WriteFiles writable
	// single files. In rx mode Read is just "/".
	Read       []Grant `json:"read"`
	Write      []Grant `json:"write"`
	WriteFiles []Grant `json:"write_files"`
	// Deny are unreadable paths inside visible trees (secrets, deny_paths,
	// masked workdir dotfiles). Only existing paths are listed.
	Deny []Grant `json:"deny"`
	// Protect are read-only paths inside writable trees. Missing ones
	// (Exists false) must be created as placeholders before launch so that
	// their first creation is blocked as well.
	Protect []Grant `json:"protect"`
	// Pin are directories inside writable trees that lead to a protected
	// path; they are made mount points so they cannot be renamed away.
	Pin      []string  `json:"pin"`
	Symlinks []Symlink `json:"symlinks"`
	// Listings hold the entries of every writable root and pinned
	// directory, for backends that must carve protected and denied paths
	// out of a writable tree by granting its other entries one by one
	// (Landlock cannot subtract).
	Listings map[string][]Grant `json:"-"`

	Env     []string    `json:"env"`
	Network NetworkSpec `json:"network"`
	Limits  Limits      `json:"limits"`
	Skills  []string    `json:"skills,omitempty"`
	// UnixSockets are existing sockets the sandbox may connect to; with
	// any, seccomp lets it create AF_UNIX sockets.
	UnixSockets []Grant  `json:"unix_sockets,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	Skipped     []Grant  `json:"skipped,omitempty"`
}

// ResolveOptions tune Resolve.
type ResolveOptions struct {
	// NetworkFiltered reports whether the caller can enforce
	// network.mode: filtered. When false, such a policy is refused.
	NetworkFiltered bool
}

// Resolve provisions spec against h.
func Resolve(spec *Spec, h Host, opt ResolveOptions) (*Resolved, error) {
	r := &resolver{spec: spec, h: h, out: &Resolved{
		Mode:     spec.Mode,
		Backend:  spec.Backend,
		Landlock: spec.Landlock,
		Scratch:  spec.StartInScratch,
		Network:  spec.Network,
		Limits:   spec.Limits,
		Skills:   spec.Skills,
	}}
	if r.out.Mode == "" {
		r.out.Mode = ModeSandbox
	}
	if r.out.Backend == "" {
		r.out.Backend = BackendAuto
	}
	if r.out.Landlock == "" {
		r.out.Landlock = LayerRequired
	}
	if r.out.Network.Mode == "" {
		r.out.Network.Mode = NetBlocked
	}
	if r.out.Network.OnUnavailable == "" {
		r.out.Network.OnUnavailable = "deny"
	}
	if r.out.Network.OnUnknown == "" {
		r.out.Network.OnUnknown = "deny"
	}
	if err := r.validate(opt); err != nil {
		return nil, err
	}
	if err := r.run(); err != nil {
		return nil, err
	}
	return r.out, nil
}

type resolver struct {
	spec *Spec
	h    Host
	out  *Resolved
}

func (r *resolver) src(field string) string {
	return strings.Join(r.spec.Sources[field], ", ")
}

func (r *resolver) validate(opt ResolveOptions) error {
	if r.out.Network.Mode == NetFiltered && !opt.NetworkFiltered {
		return &ValidationError{
			Field: "network.mode", Source: r.src("network.mode"),
			Msg: "\"filtered\" needs warden's egress proxy, which this build cannot run yet; use \"blocked\" (or \"open\" to allow all traffic explicitly)",
		}
	}
	if r.out.Backend == BackendNone {
		for _, src := range r.spec.Sources["backend"] {
			if src == "flags" || src == "builtin" {
				return &ValidationError{Field: "backend", Source: src, Msg: "\"none\" must be written in a policy file"}
			}
		}
	}
	for _, c := range r.spec.Network.Credentials {
		if c.Env == "" {
			continue
		}
		if bad, pat := DangerEnv(c.Env); bad {
			return &ValidationError{Field: "network.credentials", Source: r.src("network.credentials"), Msg: fmt.Sprintf("%s is on the built-in danger blocklist (%s)", c.Env, pat)}
		}
	}
	if len(r.spec.Network.Credentials) > 0 && r.out.Network.Mode != NetFiltered {
		return &ValidationError{Field: "network.credentials", Source: r.src("network.credentials"), Msg: "credentials are injected by the egress proxy, which needs network.mode: filtered"}
	}
	for _, k := range slices.Sorted(maps.Keys(r.spec.Env.Set)) {
		if bad, pat := DangerEnv(k); bad {
			return &ValidationError{Field: "env.set." + k, Source: r.src("env.set"), Msg: fmt.Sprintf("%s is on the built-in danger blocklist (%s), which always wins", k, pat)}
		}
	}
	return nil
}

func (r *resolver) run() error {
	out := r.out
	home := filepath.Clean(r.h.Home())
	if p, err := r.h.EvalSymlinks(home); err == nil {
		home = p
	}
	out.Home = home
	wd, err := r.h.EvalSymlinks(r.h.Workdir())
	if err != nil {
		return fmt.Errorf("policy: resolve workdir: %w", err)
	}
	out.Workdir = wd
	out.Network.UpstreamRoots = nil
	for _, p := range r.spec.Network.UpstreamRoots {
		abs, err := r.expand(p, "network.upstream_roots")
		if err != nil {
			return err
		}
		out.Network.UpstreamRoots = append(out.Network.UpstreamRoots, abs)
	}
	if wd == "/" && out.Mode != ModeRWX {
		return &ValidationError{Field: "workdir", Msg: "refusing to make / the writable workdir; cd into a project directory (or use mode rwx explicitly)"}
	}

	if out.Mode == ModeRWX {
		out.Warnings = append(out.Warnings, "mode rwx: the whole filesystem is readable and writable; only namespaces, network and environment rules apply")
		out.Read = []Grant{{Path: "/", Dir: true, Exists: true, Rule: "mode rwx"}}
		out.Write = []Grant{{Path: "/", Dir: true, Exists: true, Rule: "mode rwx"}}
		r.env()
		return nil
	}

	// Readable trees.
	if out.Mode == ModeRX {
		out.Read = append(out.Read, Grant{Path: "/", Dir: true, Exists: true, Rule: "mode rx"})
	} else {
		for _, d := range systemReadDirs {
			fi, err := r.h.Lstat(d)
			if err != nil {
				continue
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				t, err := r.h.Readlink(d)
				if err == nil {
					out.Symlinks = append(out.Symlinks, Symlink{Path: d, Target: t})
				}
				continue
			}
			out.Read = append(out.Read, Grant{Path: d, Dir: fi.IsDir(), Exists: true, Rule: "builtin system dirs"})
		}
	}
	for _, p := range r.spec.ReadPaths {
		g, err := r.grant(p, "read_paths")
		if err != nil {
			return err
		}
		r.addOrSkip(&out.Read, g)
	}
	// Writable trees.
	if out.Scratch {
		r.addOrSkip(&out.Read, Grant{Path: wd, Dir: true, Exists: true, Rule: "workdir (start_in_scratch: read-only)"})
	} else {
		out.Write = append(out.Write, Grant{Path: wd, Dir: true, Exists: true, Rule: "workdir"})
	}
	for _, l := range []struct {
		field string
		paths []string
	}{{"write_paths", r.spec.WritePaths}, {"state_paths", r.spec.StatePaths}} {
		for _, p := range l.paths {
			g, err := r.grant(p, l.field)
			if err != nil {
				return err
			}
			if g.Exists && !g.Dir {
				return &ValidationError{Field: l.field, Source: r.src(l.field), Msg: fmt.Sprintf("%s is a file; use write_files", g.Path)}
			}
			r.addOrSkip(&out.Write, g)
		}
	}
	for _, p := range r.spec.WriteFiles {
		g, err := r.grant(p, "write_files")
		if err != nil {
			return err
		}
		if g.Exists && g.Dir {
			return &ValidationError{Field: "write_files", Source: r.src("write_files"), Msg: fmt.Sprintf("%s is a directory; use write_paths", g.Path)}
		}
		r.addOrSkip(&out.WriteFiles, g)
	}
	if out.Network.Mode == NetOpen {
		// The resolver configuration often lives under /run, which the
		// sandbox replaces with a fresh tmpfs.
		if t, ok := r.resolvePath("/etc/resolv.conf"); ok && !r.visible(t) {
			r.addOrSkip(&out.Read, Grant{Path: t, Exists: true, Rule: "network open: resolver configuration"})
		}
	}
	for _, p := range r.spec.UnixSockets {
		g, err := r.grant(p, "unix_sockets")
		if err != nil {
			return err
		}
		if !g.Exists {
			return &ValidationError{Field: "unix_sockets", Source: r.src("unix_sockets"), Msg: fmt.Sprintf("%s does not exist", g.Path)}
		}
		if fi, err := r.h.Lstat(g.Path); err == nil && fi.Mode()&fs.ModeSocket == 0 {
			return &ValidationError{Field: "unix_sockets", Source: r.src("unix_sockets"), Msg: fmt.Sprintf("%s is not a socket", g.Path)}
		}
		out.UnixSockets = append(out.UnixSockets, g)
	}
	if err := r.git(); err != nil {
		return err
	}
	if err := r.protect(); err != nil {
		return err
	}
	if err := r.deny(); err != nil {
		return err
	}
	if err := r.conflicts(); err != nil {
		return err
	}
	r.listings()
	r.env()
	return nil
}

// listings records the entries of every directory between a grant root and
// a denied or protected path beneath it.
func (r *resolver) listings() {
	r.out.Listings = map[string][]Grant{}
	seen := map[string]bool{}
	var dirs []string
	roots := append(append([]Grant(nil), r.out.Read...), r.out.Write...)
	for _, d := range append(append([]Grant(nil), r.out.Deny...), r.out.Protect...) {
		for _, g := range roots {
			if !g.Dir || d.Path == g.Path || !under(d.Path, g.Path) {
				continue
			}
			for cur := filepath.Dir(d.Path); ; cur = filepath.Dir(cur) {
				if !seen[cur] {
					seen[cur] = true
					dirs = append(dirs, cur)
				}
				if cur == g.Path || cur == "/" {
					break
				}
			}
		}
	}
	for _, d := range dirs {
		ents, err := r.h.ReadDir(d)
		if err != nil {
			continue
		}
		gs := make([]Grant, 0, len(ents))
		for _, e := range ents {
			gs = append(gs, Grant{Path: filepath.Join(d, e.Name()), Dir: e.IsDir(), Exists: true})
		}
		r.out.Listings[d] = gs
	}
}

// expand turns a policy path into an absolute, cleaned path: ~ and $VAR
// are expanded, ./ is relative to the workdir.
func (r *resolver) expand(p, field string) (string, error) {
	orig := p
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = r.out.Home + p[1:]
	case strings.HasPrefix(p, "~"):
		return "", &ValidationError{Field: field, Source: r.src(field), Msg: fmt.Sprintf("%q: only ~ and ~/ are supported, not ~user", orig)}
	}
	var missing []string
	p = expandVars(p, func(name string) string {
		v, ok := r.h.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", &ValidationError{Field: field, Source: r.src(field), Msg: fmt.Sprintf("%q: variable %s is not set", orig, missing[0])}
	}
	if !filepath.IsAbs(p) {
		if !strings.HasPrefix(orig, ".") {
			return "", &ValidationError{Field: field, Source: r.src(field), Msg: fmt.Sprintf("%q does not expand to an absolute path", orig)}
		}
		p = filepath.Join(r.out.Workdir, p)
	}
	return filepath.Clean(p), nil
}

// resolvePath resolves symlinks in the longest existing prefix of p.
func (r *resolver) resolvePath(p string) (string, bool) {
	if rp, err := r.h.EvalSymlinks(p); err == nil {
		return rp, true
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p || base == "" {
		return p, false
	}
	rd, _ := r.resolvePath(dir)
	return filepath.Join(rd, base), false
}

func (r *resolver) grant(p, field string) (Grant, error) {
	ap, err := r.expand(p, field)
	if err != nil {
		return Grant{}, err
	}
	rp, exists := r.resolvePath(ap)
	g := Grant{Path: rp, Exists: exists, Rule: field}
	if exists {
		fi, err := r.h.Lstat(rp)
		if err != nil {
			return Grant{}, fmt.Errorf("policy: %s %s: %w", field, p, err)
		}
		g.Dir = fi.IsDir()
	}
	return g, nil
}

func (r *resolver) addOrSkip(list *[]Grant, g Grant) {
	if !g.Exists {
		r.out.Skipped = append(r.out.Skipped, g)
		r.out.Warnings = append(r.out.Warnings, fmt.Sprintf("%s: %s does not exist; not granted", g.Rule, g.Path))
		return
	}
	for i, e := range *list {
		if e.Path == g.Path {
			if g.Rule == "state_paths" {
				// The workdir itself declared as program state (a
				// sidecar's data dir): no project placeholders in it.
				(*list)[i].Rule = g.Rule
			}
			return
		}
	}
	*list = append(*list, g)
}

// under reports whether p is root or inside it.
func under(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

func (r *resolver) writableRoot(p string) (string, bool) {
	best := ""
	for _, w := range r.out.Write {
		if under(p, w.Path) && len(w.Path) > len(best) {
			best = w.Path
		}
	}
	return best, best != ""
}

func (r *resolver) visible(p string) bool {
	for _, l := range [][]Grant{r.out.Read, r.out.Write, r.out.WriteFiles} {
		for _, g := range l {
			if under(p, g.Path) {
				return true
			}
		}
	}
	return false
}

// git finds the git directories of the writable roots. A worktree's or
// submodule's gitdir outside the roots becomes writable (objects, refs and
// the index must be, for git commit to work) while its hooks and config are
// protected like any other.
func (r *resolver) git() error {
	roots := append([]Grant(nil), r.out.Write...)
	for _, w := range roots {
		dotgit := filepath.Join(w.Path, ".git")
		fi, err := r.h.Lstat(dotgit)
		if err != nil {
			continue
		}
		var gitdir string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return &ValidationError{Field: "workdir", Msg: fmt.Sprintf("%s is a symlink; warden refuses to guess which git directory to protect", dotgit)}
		case fi.IsDir():
			gitdir = dotgit
		default:
			b, err := r.h.ReadFile(dotgit)
			if err != nil {
				return fmt.Errorf("policy: read %s: %w", dotgit, err)
			}
			line := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
			rest, ok := strings.CutPrefix(line, "gitdir:")
			if !ok {
				return &ValidationError{Field: "workdir", Msg: fmt.Sprintf("%s is a file without a gitdir: line", dotgit)}
			}
			// The gitfile itself decides where the host's git looks for
			// hooks and config, so it is protected too.
			r.addProtect(dotgit, false, "builtin protected: gitfile")
			gitdir = strings.TrimSpace(rest)
			if !filepath.IsAbs(gitdir) {
				gitdir = filepath.Join(w.Path, gitdir)
			}
			rp, ok := r.resolvePath(filepath.Clean(gitdir))
			if !ok {
				continue
			}
			gitdir = rp
		}
		dirs := []string{gitdir}
		if b, err := r.h.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
			cd := strings.TrimSpace(string(b))
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(gitdir, cd)
			}
			if rp, ok := r.resolvePath(filepath.Clean(cd)); ok {
				dirs = append(dirs, rp)
			}
		}
		for _, d := range dirs {
			if _, ok := r.writableRoot(d); !ok {
				r.out.Write = append(r.out.Write, Grant{Path: d, Dir: true, Exists: true, Rule: "git dir of " + w.Path})
			}
			r.protectGitDir(d, 0)
		}
	}
	return nil
}

func (r *resolver) protectGitDir(d string, depth int) {
	for _, n := range []string{"hooks", "config"} {
		p := filepath.Join(d, n)
		r.addProtect(p, n == "hooks", "builtin protected: git "+n)
	}
	if depth > 4 {
		return
	}
	mods := filepath.Join(d, "modules")
	r.walkModules(mods, depth)
	if wts, err := r.h.ReadDir(filepath.Join(d, "worktrees")); err == nil {
		for _, e := range wts {
			if e.IsDir() {
				r.addProtect(filepath.Join(d, "worktrees", e.Name(), "config.worktree"), false, "builtin protected: git config")
			}
		}
	}
}

// walkModules protects the hooks and config of every submodule gitdir under
// dir (submodules can nest: modules/a/modules/b).
func (r *resolver) walkModules(dir string, depth int) {
	ents, err := r.h.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if _, err := r.h.Lstat(filepath.Join(sub, "HEAD")); err == nil {
			r.protectGitDir(sub, depth+1)
		} else if depth < 4 {
			r.walkModules(sub, depth+1) // module names may contain slashes
		}
	}
}

func (r *resolver) addProtect(p string, dir bool, rule string) {
	for _, g := range r.out.Protect {
		if g.Path == p {
			return
		}
	}
	g := Grant{Path: p, Dir: dir, Rule: rule}
	if fi, err := r.h.Lstat(p); err == nil {
		g.Exists = true
		g.Dir = fi.IsDir()
		if fi.Mode()&fs.ModeSymlink != 0 {
			g.Dir = false
		}
	}
	r.out.Protect = append(r.out.Protect, g)
}

func (r *resolver) protect() error {
	roots := append([]Grant(nil), r.out.Write...)
	for _, w := range roots {
		if strings.HasPrefix(w.Rule, "git dir of") || w.Rule == "state_paths" {
			continue
		}
		for _, rel := range protectedInRoots {
			if strings.HasPrefix(rel, ".git/") {
				continue // handled by git(), which knows the real gitdir
			}
			dir := strings.HasSuffix(rel, "/")
			r.addProtect(filepath.Join(w.Path, strings.TrimSuffix(rel, "/")), dir, "builtin protected in writable roots")
		}
		for _, rel := range protectedIfPresent {
			p := filepath.Join(w.Path, strings.TrimSuffix(rel, "/"))
			if _, err := r.h.Lstat(p); err == nil {
				r.addProtect(p, strings.HasSuffix(rel, "/"), "builtin protected in writable roots (when present)")
			}
		}
		if _, err := r.h.Lstat(filepath.Join(w.Path, ".git")); err != nil {
			// No repository: block creating one, so no hooks or config can
			// be planted for the host's git to run later (threat A3). An
			// empty read-only .git directory is skipped by git's discovery.
			r.addProtect(filepath.Join(w.Path, ".git"), true, "builtin protected: no git repository in writable root")
		}
	}
	if _, ok := r.writableRoot(r.out.Home); ok {
		for _, rel := range protectedInHome {
			dir := strings.HasSuffix(rel, "/")
			r.addProtect(filepath.Join(r.out.Home, strings.TrimSuffix(rel, "/")), dir, "builtin protected in $HOME")
		}
	}
	// A protected path that is a symlink cannot be protected in place: the
	// link itself could be replaced (threat A11).
	var keep []Grant
	for _, g := range r.out.Protect {
		root, ok := r.writableRoot(g.Path)
		if !ok {
			continue // not writable anyway
		}
		if g.Exists {
			fi, err := r.h.Lstat(g.Path)
			if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return &ValidationError{Field: "protected paths", Msg: fmt.Sprintf("%s is a symlink inside writable %s; replace it with the real file or remove it (a symlink in a protected position could be swapped)", g.Path, root)}
			}
		}
		// Ancestors between the root and the protected path are pinned,
		// and a missing ancestor makes the first missing component the
		// placeholder instead.
		cur := root
		rel, _ := filepath.Rel(root, g.Path)
		parts := strings.Split(rel, "/")
		for i, part := range parts[:len(parts)-1] {
			cur = filepath.Join(cur, part)
			fi, err := r.h.Lstat(cur)
			if err != nil {
				g = Grant{Path: cur, Dir: true, Exists: false, Rule: g.Rule}
				break
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return &ValidationError{Field: "protected paths", Msg: fmt.Sprintf("%s (leading to protected %s) is a symlink inside writable %s; refusing", cur, strings.Join(parts[i+1:], "/"), root)}
			}
			if !slices.Contains(r.out.Pin, cur) {
				r.out.Pin = append(r.out.Pin, cur)
			}
		}
		if !slices.ContainsFunc(keep, func(k Grant) bool { return k.Path == g.Path }) {
			keep = append(keep, g)
		}
	}
	// A protected path under another missing protected placeholder is
	// covered by it.
	r.out.Protect = slices.DeleteFunc(keep, func(g Grant) bool {
		for _, o := range keep {
			if o.Path != g.Path && !o.Exists && under(g.Path, o.Path) {
				return true
			}
		}
		return false
	})
	slices.SortFunc(r.out.Protect, func(a, b Grant) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(r.out.Pin)
	return nil
}

func (r *resolver) deny() error {
	var cands []Grant
	for _, rel := range secretsInHome {
		cands = append(cands, Grant{Path: filepath.Join(r.out.Home, strings.TrimSuffix(rel, "/")), Rule: "builtin secrets in $HOME"})
	}
	for _, p := range secretsSystem {
		// Masks cost a mount each; a file the user cannot read anyway
		// (every one of these, unless warden runs as root) needs none.
		if p = strings.TrimSuffix(p, "/"); r.h.Readable(p) {
			cands = append(cands, Grant{Path: p, Rule: "builtin system secrets"})
		}
	}
	for _, p := range r.spec.DenyPaths {
		g, err := r.grant(p, "deny_paths")
		if err != nil {
			return err
		}
		cands = append(cands, g)
	}
	// Dotfiles at the top of the workdir are masked unless allow_hidden.
	if ents, err := r.h.ReadDir(r.out.Workdir); err == nil {
		allow := append(slices.Clone(DefaultAllowHidden), r.spec.AllowHidden...)
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, ".") && !hiddenAllowed(allow, n) {
				cands = append(cands, Grant{Path: filepath.Join(r.out.Workdir, n), Rule: "workdir dotfile not in allow_hidden"})
			}
		}
	}
	for _, g := range cands {
		if !r.visible(g.Path) {
			continue
		}
		fi, err := r.h.Lstat(g.Path)
		if err != nil {
			continue
		}
		g.Exists = true
		g.Dir = fi.IsDir()
		if fi.Mode()&fs.ModeSymlink != 0 {
			// Mask the target too: the link is followed when mounting.
			if t, ok := r.resolvePath(g.Path); ok && r.visible(t) {
				if tfi, err := r.h.Lstat(t); err == nil {
					r.addDeny(Grant{Path: t, Dir: tfi.IsDir(), Exists: true, Rule: g.Rule})
				}
			}
			g.Dir = false
		}
		r.addDeny(g)
	}
	slices.SortFunc(r.out.Deny, func(a, b Grant) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

func (r *resolver) addDeny(g Grant) {
	for _, d := range r.out.Deny {
		if d.Path == g.Path {
			return
		}
	}
	r.out.Deny = append(r.out.Deny, g)
}

// conflicts enforces "deny wins": a grant inside a denied path is an error.
func (r *resolver) conflicts() error {
	for _, d := range r.out.Deny {
		for _, l := range []struct {
			field string
			gs    []Grant
		}{{"read_paths", r.out.Read}, {"write_paths", r.out.Write}, {"write_files", r.out.WriteFiles}} {
			for _, g := range l.gs {
				if g.Path != "/" && under(g.Path, d.Path) {
					return &ValidationError{Field: l.field, Source: r.src(l.field), Msg: fmt.Sprintf("%s is inside %s, which is denied (%s); deny wins", g.Path, d.Path, d.Rule)}
				}
			}
		}
	}
	return nil
}

func (r *resolver) env() {
	set := map[string]string{}
	allow := append(slices.Clone(baseEnv), r.spec.Env.Passthrough...)
	for _, kv := range r.h.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(k) {
			continue
		}
		if m, _ := matchEnv(allow, k); !m {
			continue
		}
		if bad, _ := DangerEnv(k); bad {
			continue
		}
		set[k] = v
	}
	maps.Copy(set, r.spec.Env.Set)
	set["HOME"] = r.out.Home
	set["TMPDIR"] = "/tmp"
	if _, ok := set["PATH"]; !ok {
		set["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
	}
	r.out.Env = make([]string, 0, len(set))
	for _, k := range slices.Sorted(maps.Keys(set)) {
		r.out.Env = append(r.out.Env, k+"="+set[k])
	}
}

// expandVars expands $VAR and ${VAR}; "$$" is a literal dollar.
func expandVars(s string, get func(string) string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		var name string
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			name = s[i+2 : i+2+end]
			i += 2 + end
		} else {
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name = s[i+1 : j]
			i = j - 1
		}
		if name == "" {
			b.WriteByte('$')
			continue
		}
		b.WriteString(get(name))
	}
	return b.String()
}
