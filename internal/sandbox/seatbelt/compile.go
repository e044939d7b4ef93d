package seatbelt

import (
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
)

// The static parts of every profile. base.sbpl opens it (deny default and
// what any process needs); tail.sbpl closes it in modes sandbox and rx
// with denies that must beat every allow.
var (
	//go:embed base.sbpl
	baseSBPL string
	//go:embed tail.sbpl
	tailSBPL string
)

// Options are the runner-supplied parts of a profile.
type Options struct {
	// ProxyPort is the loopback port of warden's egress proxy; required
	// for network mode filtered, ignored otherwise.
	ProxyPort int
	// FacadeSocket, when set, is the one Unix socket the sandbox may
	// connect to in every network mode. It must be spelled exactly as the
	// sandboxed client will spell it (Seatbelt matches the socket path as
	// given to connect, not a resolved one).
	FacadeSocket string
	// TmpDir, when set, is the per-session $TMPDIR, readable and
	// writable. It must be absolute and symlink-free (/private/var/...,
	// not /var/...): Seatbelt matches resolved paths.
	TmpDir string
	// TTY, when set, is the device of the terminal warden runs in (e.g.
	// /dev/ttys003). It is the only terminal the sandbox may read, write
	// and ioctl; other terminal windows of the same user stay closed.
	TTY string
}

// Param is one sandbox-exec -D KEY=VALUE parameter.
type Param struct {
	Key   string
	Value string
}

// Profile is a compiled Seatbelt profile. Text never contains a host
// path: every path is a Param that Text reads with (param "KEY").
type Profile struct {
	Text   string
	Params []Param
}

// Args returns sandbox-exec's arguments up to the command:
// -p TEXT -D KEY=VALUE ... (the caller appends "--" and the argv).
func (p *Profile) Args() []string {
	args := make([]string, 0, 2+2*len(p.Params))
	args = append(args, "-p", p.Text)
	for _, kv := range p.Params {
		args = append(args, "-D", kv.Key+"="+kv.Value)
	}
	return args
}

// Rule messages, shown in the sandbox violation log (log stream
// --predicate 'sender == "Sandbox"') so warden can attribute violations.
const (
	msgDeny    = "warden:deny"
	msgProtect = "warden:protect"
	msgRename  = "warden:rename"
)

// Operation sets. file-test-existence and file-map-executable are their
// own operations on current macOS: without them access(2) reports a
// readable file as missing and dyld cannot map a dylib or a native Node
// addon that the sandbox may read anyway.
const (
	opsRead  = "file-read* file-test-existence file-map-executable"
	opsWrite = "file-read* file-test-existence file-map-executable file-write*"
)

// Compile turns a launch spec into a Seatbelt profile. It is pure: the
// same Spec and Options always give the same Profile, on any OS.
//
// # Layout
//
// base.sbpl, then the allows (read grants, write grants, TMPDIR, the
// terminal, the network), then the denies (unreadable paths, protected
// paths, rename guards), then tail.sbpl. Seatbelt applies the last rule
// that matches an operation, so every deny is emitted after every allow,
// and no path that a deny covers is ever allowed a narrower operation
// (say file-write-unlink): sandbox-runtime found that such an allow can
// outrank a later, broader deny.
//
// # Protected paths and their first creation (threat A5, B9)
//
// Each policy.Resolved.Protect path P, whether it exists or not, gets
// (deny file-write* (subpath (param P))). Seatbelt evaluates path filters
// on the path an operation names, and for a create that is the new path
// (the parent directory's path plus the new name), so the rule applies
// to a file that does not exist yet: open(O_CREAT), mkdir, symlink,
// link and rename-onto are all file-write-create on P and are denied.
// Because subpath also covers P itself, a missing P can't be created as a
// directory either, so nothing can be put under it. Unlike bwrap, no
// placeholder has to be created on the host. sandbox-runtime relies on
// the same behaviour (its move-blocking rules deny file-write-create on
// paths that do not exist yet). run_darwin_test.go checks it on a Mac.
//
// # Hard links (threat A11)
//
// The profile allows no link-specific operation. Whether link(2) of a
// protected or unreadable file to a new name is refused (rather than
// only checked as file-write-create on the new name) is not verified
// here; run_darwin_test.go has the probes.
//
// # Renaming an ancestor away (threat A9)
//
// A rule matches a path, so renaming any directory above P moves P to a
// path no rule names (mv .git g; echo > g/hooks/x; mv g .git). rename(2)
// is checked as file-write-unlink on the source and file-write-create on
// the destination, so every ancestor of every protected or unreadable
// path, up to but not including "/", gets
// (deny file-write-unlink file-write-create (literal (param A))). This
// includes the ancestors at and above the writable root: a root nested
// in another writable root could otherwise be renamed away too. These are
// literal rules, so files beside the ancestors can still be removed.
//
// # Case and Unicode aliasing (threat A10)
//
// APFS and HFS+ volumes are usually case-insensitive, and APFS folds
// Unicode case too, so .CLAUDE/settings.json and .claude/settings.json
// are one file. Seatbelt compares strings. For an existing file the
// kernel reports the vnode's cached name, which may be the spelling used
// first rather than the on-disk one; for a file being created it is the
// spelling the caller typed. So, for every protected path, unreadable
// path and guarded ancestor whose trailing components are warden's
// built-in names (.git, hooks, .claude, .ssh, ...), Compile adds a
// case-insensitive regex anchored at the directory above those names:
//
//	(regex (string-append "^" (regex-quote (param "W0")) #"/\.[cC][lL][aA][uU][dD][eE](/|$)"))
//
// The host path reaches the regex only through regex-quote of a
// parameter; the text holds nothing but built-in names. A component that
// is not built in (a submodule or worktree name, a user's deny_paths
// entry) is matched case-sensitively: it would have to appear in the
// text to be folded.
func Compile(s *sandbox.Spec, opt Options) (*Profile, error) {
	if s == nil || s.Policy == nil {
		return nil, errors.New("seatbelt: no policy")
	}
	if len(s.Argv) == 0 {
		return nil, errors.New("seatbelt: no command")
	}
	p := s.Policy
	if err := validate(p, opt); err != nil {
		return nil, err
	}
	g := &gen{keys: map[string]string{}, next: map[string]int{}, roots: p.Write}
	g.w(baseSBPL)
	g.w("\n;;; ---- generated by warden: mode " + string(p.Mode) + ", network " + string(p.Network.Mode) + " ----\n")
	g.w(";;; Paths are sandbox-exec -D parameters; this text names none.\n")

	if p.Mode == policy.ModeRWX {
		g.w("\n;; !!! MODE RWX: THE WHOLE FILESYSTEM IS READABLE AND WRITABLE. !!!\n")
		g.w(";; !!! No path is denied or protected; only the process, Mach,   !!!\n")
		g.w(";; !!! IPC and network rules of this profile still apply.       !!!\n")
		g.w("(allow file*)\n")
	} else {
		g.fileAllows(p, opt)
	}
	if err := g.network(p.Network.Mode, opt); err != nil {
		return nil, err
	}
	if p.Mode != policy.ModeRWX {
		g.named("HOME", p.Home) // read by tail.sbpl
		g.w("\n;;; ---- denies: everything below overrides every allow above ----\n")
		g.denies(p)
		g.w("\n")
		g.w(tailSBPL)
	}
	return &Profile{Text: g.b.String(), Params: g.params}, nil
}

func validate(p *policy.Resolved, opt Options) error {
	switch p.Mode {
	case policy.ModeSandbox, policy.ModeRX, policy.ModeRWX:
	default:
		return fmt.Errorf("seatbelt: mode %q is not supported", p.Mode)
	}
	switch p.Network.Mode {
	case policy.NetBlocked, policy.NetOpen:
	case policy.NetFiltered:
		if opt.ProxyPort < 1 || opt.ProxyPort > 65535 {
			return fmt.Errorf("seatbelt: network mode filtered needs the egress proxy port, got %d", opt.ProxyPort)
		}
	default:
		return fmt.Errorf("seatbelt: network mode %q is not supported by this backend", p.Network.Mode)
	}
	check := func(what, path string) error {
		if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsRune(path, 0) {
			return fmt.Errorf("seatbelt: %s %q must be an absolute, clean path", what, path)
		}
		return nil
	}
	if p.Mode != policy.ModeRWX {
		if err := check("home", p.Home); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		what string
		gs   []policy.Grant
	}{{"read grant", p.Read}, {"write grant", p.Write}, {"write_files grant", p.WriteFiles}, {"deny path", p.Deny}, {"protected path", p.Protect}} {
		for _, gr := range l.gs {
			if err := check(l.what, gr.Path); err != nil {
				return err
			}
		}
	}
	for _, sl := range p.Symlinks {
		if err := check("symlink", sl.Path); err != nil {
			return err
		}
	}
	for _, o := range []struct{ what, path string }{{"facade socket", opt.FacadeSocket}, {"TMPDIR", opt.TmpDir}, {"terminal", opt.TTY}} {
		if o.path == "" {
			continue
		}
		if err := check(o.what, o.path); err != nil {
			return err
		}
	}
	if opt.TmpDir == "/" {
		return errors.New("seatbelt: TMPDIR must not be /")
	}
	return nil
}

// gen accumulates the profile text and its parameters.
type gen struct {
	b      strings.Builder
	params []Param
	keys   map[string]string // path -> key of a generated parameter
	next   map[string]int    // prefix -> next index
	roots  []policy.Grant    // writable trees
}

func (g *gen) w(s string) { g.b.WriteString(s) }

// param returns the key of the parameter holding path, adding one named
// prefix+N on first use. A path used twice shares one key.
func (g *gen) param(prefix, path string) string {
	if k, ok := g.keys[path]; ok {
		return k
	}
	k := prefix + strconv.Itoa(g.next[prefix])
	g.next[prefix]++
	g.keys[path] = k
	g.params = append(g.params, Param{Key: k, Value: path})
	return k
}

// named adds a parameter with a fixed key that static text refers to.
func (g *gen) named(key, value string) string {
	g.params = append(g.params, Param{Key: key, Value: value})
	return key
}

// rule writes (action ops filter... (with message msg)). A rule without
// filters would match every path, so it is not written at all.
func (g *gen) rule(action, ops string, filters []string, msg string) {
	if len(filters) == 0 {
		return
	}
	g.w("(" + action + " " + ops)
	for _, f := range filters {
		g.w("\n  " + f)
	}
	if msg != "" {
		g.w("\n  (with message \"" + msg + "\")")
	}
	g.w(")\n")
}

func paramRef(key string) string { return `(param "` + key + `")` }
func subpath(key string) string  { return "(subpath " + paramRef(key) + ")" }
func literal(key string) string  { return "(literal " + paramRef(key) + ")" }
func ancestry(key string) string { return "(path-ancestors " + paramRef(key) + ")" }

// dataAlias matches the same file through the data volume's other name
// (/System/Volumes/Data/Users/... for /Users/...). Only a read-anything
// grant (mode rx) could let such a spelling through, so only unreadable
// paths get it.
func dataAlias(key string) string {
	return `(subpath (string-append "/System/Volumes/Data" ` + paramRef(key) + "))"
}

func (g *gen) fileAllows(pol *policy.Resolved, opt Options) {
	var reads, meta []string
	g.w("\n;; readable trees and files\n")
	for _, gr := range pol.Read {
		k := g.param("R", gr.Path)
		if gr.Dir {
			reads = append(reads, subpath(k))
		} else {
			reads = append(reads, literal(k))
		}
		if gr.Path != "/" {
			meta = append(meta, ancestry(k))
		}
	}
	g.rule("allow", opsRead, reads, "")
	var links []string
	for _, sl := range pol.Symlinks {
		links = append(links, literal(g.param("L", sl.Path)))
	}
	if len(links) > 0 {
		g.w(";; system symlinks: reading one reveals only its target\n")
		g.rule("allow", "file-read*", links, "")
	}

	var writes []string
	g.w(";; writable trees and files\n")
	for _, gr := range pol.Write {
		k := g.param("W", gr.Path)
		writes = append(writes, subpath(k))
		if gr.Path != "/" {
			meta = append(meta, ancestry(k))
		}
	}
	for _, gr := range pol.WriteFiles {
		k := g.param("F", gr.Path)
		writes = append(writes, literal(k))
		meta = append(meta, ancestry(k))
	}
	if opt.TmpDir != "" {
		k := g.named("TMPDIR", opt.TmpDir)
		writes = append(writes, subpath(k))
		meta = append(meta, ancestry(k))
	}
	g.rule("allow", opsWrite, writes, "")
	if len(meta) > 0 {
		g.w(";; stat(2) on the directories above each grant (realpath, getcwd)\n")
		g.rule("allow", "file-read-metadata file-test-existence", meta, "")
	}
	if opt.TTY != "" {
		g.w(";; the terminal warden runs in (the target is not in its session)\n")
		g.rule("allow", "file-read* file-write-data file-ioctl", []string{literal(g.named("TTY", opt.TTY))}, "")
	}
}

func (g *gen) network(mode policy.NetMode, opt Options) error {
	g.w("\n;; network: " + string(mode) + "\n")
	if opt.FacadeSocket != "" {
		k := g.named("FACADE", opt.FacadeSocket)
		g.w(";; warden's facade socket, the one Unix socket the sandbox may reach\n")
		g.w("(allow network-outbound (remote unix-socket (path-literal " + paramRef(k) + ")))\n")
		g.w("(allow file-read-metadata file-test-existence (literal " + paramRef(k) + "))\n")
	}
	switch mode {
	case policy.NetBlocked:
		g.w(";; no other network rule: (deny default) covers TCP, UDP and Unix sockets\n")
	case policy.NetFiltered:
		// A port number is not a path and cannot be a parameter inside a
		// (remote ip) filter, so it is formatted here; validate() bounds
		// it to 1..65535, so only digits reach the text. Seatbelt accepts
		// only "localhost" or "*" as the host part, and localhost covers
		// 127.0.0.1 and ::1. Every other host port, loopback included
		// (threat E17), stays closed.
		g.w(";; only warden's egress proxy on the loopback interface\n")
		g.w(`(allow network-outbound (remote ip "localhost:` + strconv.Itoa(opt.ProxyPort) + `"))` + "\n")
	case policy.NetOpen:
		g.w(netOpenSBPL)
	default:
		return fmt.Errorf("seatbelt: network mode %q is not supported by this backend", mode)
	}
	return nil
}

// netOpenSBPL is static: open means every IP address, but still not every
// Unix socket (docker.sock, ssh-agent and other local services are
// escapes, not "network": threats C1, C3).
const netOpenSBPL = `;; IP networking in both directions, any address and port.
(allow network-outbound (remote ip "*:*"))
(allow network-inbound network-bind (local ip "*:*"))
;; DNS: libSystem's resolver asks mDNSResponder over this socket.
(allow network-outbound
  (remote unix-socket (path-literal "/private/var/run/mDNSResponder"))
  (remote unix-socket (path-literal "/var/run/mDNSResponder")))
;; Routing sockets and interface lists (Go net.Interfaces, Node os.networkInterfaces).
(allow system-socket)
(allow sysctl-read (sysctl-name-prefix "net.routetable."))
(allow mach-lookup
  ;; Resolver and proxy configuration (SCDynamicStore, dnsinfo).
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  ;; Certificate verification through Security.framework (Go's crypto/x509
  ;; on macOS, Swift, curl with the system trust store). trustd may fetch
  ;; OCSP/CRL/AIA URLs named by a certificate, which is acceptable only
  ;; when the network is open anyway.
  (global-name "com.apple.trustd.agent"))
`

func (g *gen) denies(pol *policy.Resolved) {
	v := vocabulary()

	var deny []string
	for _, d := range pol.Deny {
		k := g.param("D", d.Path)
		deny = append(deny, subpath(k), dataAlias(k))
		if f := g.folded(d.Path, g.stop(d.Path), v, "(/|$)"); f != "" {
			deny = append(deny, f)
		}
	}
	if len(deny) > 0 {
		g.w(";; unreadable and unwritable paths (secrets, deny_paths, masked dotfiles)\n")
		g.rule("deny", "file-read* file-write*", deny, msgDeny)
	}

	var prot []string
	for _, pr := range pol.Protect {
		k := g.param("P", pr.Path)
		prot = append(prot, subpath(k))
		if f := g.folded(pr.Path, g.stop(pr.Path), v, "(/|$)"); f != "" {
			prot = append(prot, f)
		}
	}
	if len(prot) > 0 {
		g.w(";; protected paths: readable, never created, changed, renamed or removed,\n")
		g.w(";; whether or not they exist now; then the same names in any case\n")
		g.rule("deny", "file-write*", prot, msgProtect)
	}

	// Rename guards: every protected or unreadable path (already covered
	// by file-write* above; repeated so the guard list is complete on its
	// own) and every directory above one.
	var anc, dirs []string
	for _, l := range [][]policy.Grant{pol.Protect, pol.Deny} {
		for _, gr := range l {
			for a := gr.Path; a != "/"; a = filepath.Dir(a) {
				if !slices.Contains(anc, a) {
					anc = append(anc, a)
				}
				if a != gr.Path && !slices.Contains(dirs, a) {
					dirs = append(dirs, a)
				}
			}
		}
	}
	slices.Sort(anc)
	slices.Sort(dirs)
	var guards, foldedGuards []string
	for _, a := range anc {
		guards = append(guards, literal(g.param("A", a)))
	}
	// The paths themselves are case-folded by the rules above; their
	// directories are folded here. A variant spelling can only be renamed
	// inside a writable tree.
	for _, a := range dirs {
		root, ok := g.root(a)
		if !ok || root == a {
			continue
		}
		if f := g.folded(a, root, v, "$"); f != "" {
			foldedGuards = append(foldedGuards, f)
		}
	}
	if len(guards) > 0 {
		g.w(";; rename guards: no protected or unreadable path, and no directory above\n")
		g.w(";; one, may be renamed away or replaced (mv .git g; edit g/hooks/x; mv g .git)\n")
		g.rule("deny", "file-write-unlink file-write-create", append(guards, foldedGuards...), msgRename)
	}
}

// root returns the innermost writable tree containing path.
func (g *gen) root(path string) (string, bool) {
	best := ""
	for _, w := range g.roots {
		if under(path, w.Path) && len(w.Path) > len(best) {
			best = w.Path
		}
	}
	return best, best != ""
}

// stop is where case folding of path's trailing names ends: its writable
// tree, or "/" outside them.
func (g *gen) stop(path string) string {
	if r, ok := g.root(path); ok {
		return r
	}
	return "/"
}

func under(p, root string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root+"/")
}

// folded returns a case-insensitive regex filter for the trailing
// built-in names of path (below stop), anchored at the directory above
// them, which is passed as a parameter; "" when path does not end in a
// built-in name.
func (g *gen) folded(path, stop string, v map[string]bool, end string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, stop), "/")
	if stop == path || rel == "" {
		return ""
	}
	comps := strings.Split(rel, "/")
	i := len(comps)
	for i > 0 && v[comps[i-1]] {
		i--
	}
	if i == len(comps) {
		return ""
	}
	tail := foldRegex(strings.Join(comps[i:], "/"))
	anchor := filepath.Join(append([]string{stop}, comps[:i]...)...)
	if anchor == "/" {
		return `(regex #"^/` + tail + end + `")`
	}
	return `(regex (string-append "^" (regex-quote ` + paramRef(g.param("C", anchor)) + `) #"/` + tail + end + `"))`
}
