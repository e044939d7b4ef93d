// Package harness describes the agent harnesses `warden start` runs (Claude
// Code, OpenCode, Codex CLI, Gemini CLI) as data, and implements the bridge
// through which a harness asks warden whether a tool call may run.
//
// A Descriptor says where the harness's binary is, which variables point
// its state into a warden-managed home (so it never writes the user's real
// dotfiles), which model API hosts and keys it needs, where it looks for
// skills, and how its native extension (hooks or a plugin) is installed.
// Adding a harness is one Descriptor in a subpackage plus one bridge.
package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Descriptor is one harness.
type Descriptor struct {
	// Name is the canonical name (`warden start NAME`); Aliases also work.
	Name    string
	Aliases []string
	// Title is the human name.
	Title string
	// Binary says how to find the executable.
	Binary Binary
	// Env is set for the harness; see Expand.
	Env map[string]string
	// Dirs are created under the managed home before the start.
	Dirs []string
	// APIHosts are the model API hosts allowed through the egress proxy by
	// default (without --api-base).
	APIHosts []string
	// Keys are the model API keys the harness reads; each is injected at
	// egress when the user stored it in warden (or has it in the
	// environment), and the harness only sees a placeholder.
	Keys []Key
	// SkillDirs are where the harness looks for skills, relative to the
	// managed home, or "~/..." for the sandbox's $HOME.
	SkillDirs []string
	// Bridge returns the harness's native extension and settings.
	Bridge func(in *BridgeInput) (*Bridge, error)
	// Args, when set, rewrites the user's arguments (e.g. to add a flag
	// after a subcommand).
	Args func(user []string) []string
	// Prepare, when set, adjusts the harness's own state in the managed
	// home just before the start, knowing the session's environment
	// (e.g. to pre-approve the key placeholder, which is new each session).
	Prepare func(home string, env map[string]string) error
	// SandboxOff says how the harness's own sandbox or permission prompt
	// layer is turned off (warden is the sandbox); shown by --print-plan.
	SandboxOff string
}

// Binary says how to find a harness's executable.
type Binary struct {
	// Names are looked up on $PATH.
	Names []string
	// Package is the npm package; Platform is the native binary inside
	// node_modules that its JavaScript shim would start ({os}, {arch} and
	// {triple} are replaced), started directly to save the Node start-up.
	Package  string
	Platform string
	// Script, when set, is a Node script inside Package run with `node`.
	Script string
}

// Key is one model API key.
type Key struct {
	// Secret is the name in warden's secret store, scope "net" (`warden
	// secret set net NAME`).
	Secret string
	// Env is the variable the harness reads; it also is the host variable
	// the key is taken from when it is not in the store.
	Env string
	// Host is the API host the key is sent to; Header the header carrying
	// it ("" means Authorization: Bearer).
	Host   string
	Header string
}

// BridgeInput is what a Bridge needs to know.
type BridgeInput struct {
	Workdir string
	// Home is the managed home (the same path inside and outside).
	Home string
	// RunDir is the in-sandbox directory of read-only bridge files.
	RunDir string
	// Self is the warden binary inside the sandbox and Config the bridge
	// configuration file the hooks read.
	Self   string
	Config string
	// Briefing is warden's note to the model: the sandbox's rules and the
	// skills it can use.
	Briefing string
	// APIBase, when set, points the harness's model API at this URL.
	APIBase string
	// KeyAvailable is set when warden injects a model API key.
	KeyAvailable bool
}

// Bridge is a harness's extension: files (read-only inside the sandbox),
// arguments prepended to the user's, and variables.
type Bridge struct {
	Files []File
	Args  []string
	Env   map[string]string
}

// File is a bridge file. Path is absolute inside the sandbox: under
// BridgeInput.RunDir (warden's tmpfs) or under the managed home, where it is
// a read-only bind over the writable tree.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Lookup finds a descriptor by name or alias.
func Lookup(all []*Descriptor, name string) (*Descriptor, bool) {
	n := strings.ToLower(name)
	for _, d := range all {
		if d.Name == n || slices.Contains(d.Aliases, n) {
			return d, true
		}
	}
	return nil, false
}

// Names lists "name (aliases)" for an error message.
func Names(all []*Descriptor) string {
	parts := make([]string, 0, len(all))
	for _, d := range all {
		s := d.Name
		if len(d.Aliases) > 0 {
			s += " (" + strings.Join(d.Aliases, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ErrNotFound is returned when a harness's binary is not installed.
var ErrNotFound = errors.New("harness: not installed")

// Found is a located harness executable.
type Found struct {
	// Argv0 is what to execute: the native binary, or node for a script.
	Argv []string
	// Roots are directories the sandbox must be able to read for it to
	// run (the package and its platform package), beyond system dirs.
	Roots []string
	// Version is the npm package version when known.
	Version string
}

// Env is the subset of the host environment Find consults.
type Env struct {
	Path     string // $PATH
	NpmRoots []string
	GOOS     string
	GOARCH   string
}

var (
	npmArch    = map[string]string{"amd64": "x64", "arm64": "arm64"}
	rustTriple = map[string]string{
		"linux/amd64": "x86_64-unknown-linux-musl", "linux/arm64": "aarch64-unknown-linux-musl",
		"darwin/amd64": "x86_64-apple-darwin", "darwin/arm64": "aarch64-apple-darwin",
	}
)

// Find locates the harness: on $PATH (following npm's shims back to their
// package), then in the npm roots given.
func (d *Descriptor) Find(e Env) (*Found, error) {
	var tried []string
	for _, dir := range filepath.SplitList(e.Path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		for _, n := range d.Binary.Names {
			p := filepath.Join(dir, n)
			if !isExecutable(p) {
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			if f, ok := d.fromPackage(e, packageRootOf(real, d.Binary.Package)); ok {
				return f, nil
			}
			if d.Binary.Script == "" && isNative(real) {
				return &Found{Argv: []string{real}, Roots: []string{filepath.Dir(real)}}, nil
			}
			tried = append(tried, real)
		}
	}
	for _, root := range e.NpmRoots {
		if f, ok := d.fromPackage(e, filepath.Join(root, d.Binary.Package)); ok {
			return f, nil
		}
		tried = append(tried, filepath.Join(root, d.Binary.Package))
	}
	hint := ""
	if d.Binary.Package != "" {
		hint = fmt.Sprintf(" (install it with: npm install -g %s)", d.Binary.Package)
	}
	if len(tried) > 0 {
		return nil, fmt.Errorf("%w: %s: no usable %s in %s%s", ErrNotFound, d.Name, strings.Join(d.Binary.Names, "/"), strings.Join(tried, ", "), hint)
	}
	return nil, fmt.Errorf("%w: %s: %s is not on PATH%s", ErrNotFound, d.Name, strings.Join(d.Binary.Names, "/"), hint)
}

// fromPackage finds the executable inside an npm package directory.
func (d *Descriptor) fromPackage(e Env, pkg string) (*Found, bool) {
	if pkg == "" || d.Binary.Package == "" {
		return nil, false
	}
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err != nil {
		return nil, false
	}
	f := &Found{Roots: []string{pkg}, Version: packageVersion(pkg)}
	if d.Binary.Script != "" {
		script := filepath.Join(pkg, d.Binary.Script)
		node := lookPath(e.Path, "node")
		if node == "" || !isFile(script) {
			return nil, false
		}
		f.Argv = []string{node, script}
		if nd := filepath.Dir(filepath.Dir(node)); nd != "/usr" && nd != "/" {
			f.Roots = append(f.Roots, nd)
		}
		return f, true
	}
	rel := strings.NewReplacer("{os}", e.GOOS, "{arch}", npmArch[e.GOARCH], "{triple}", rustTriple[e.GOOS+"/"+e.GOARCH]).Replace(d.Binary.Platform)
	// The platform package sits next to the main one in node_modules, or
	// in the main one's own node_modules.
	modules := nodeModulesOf(pkg)
	for _, base := range []string{modules, filepath.Join(pkg, "node_modules")} {
		p := filepath.Join(base, rel)
		if isExecutable(p) && isNative(p) {
			platformPkg := filepath.Join(base, strings.SplitN(rel, "/", 3)[0])
			if strings.HasPrefix(rel, "@") {
				parts := strings.SplitN(rel, "/", 3)
				platformPkg = filepath.Join(base, parts[0], parts[1])
			}
			f.Argv = []string{p}
			f.Roots = append(f.Roots, platformPkg)
			return f, true
		}
	}
	return nil, false
}

// packageRootOf returns the directory of npm package pkg that contains p
// (p resolved from a PATH shim), or "".
func packageRootOf(p, pkg string) string {
	if pkg == "" {
		return ""
	}
	marker := string(filepath.Separator) + "node_modules" + string(filepath.Separator) + filepath.FromSlash(pkg) + string(filepath.Separator)
	if i := strings.LastIndex(p, marker); i >= 0 {
		return p[:i+len(marker)-1]
	}
	return ""
}

func nodeModulesOf(pkg string) string {
	d := filepath.Dir(pkg)
	if strings.HasPrefix(filepath.Base(d), "@") {
		d = filepath.Dir(d)
	}
	return d
}

var versionRe = regexp.MustCompile(`"version"\s*:\s*"([^"]+)"`)

func packageVersion(pkg string) string {
	b, err := os.ReadFile(filepath.Join(pkg, "package.json")) //nolint:gosec // G304: an npm package the user installed
	if err != nil {
		return ""
	}
	if m := versionRe.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

func lookPath(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return r
			}
		}
	}
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// isNative reports whether p is an ELF or Mach-O executable (not a script
// or npm's "postinstall did not run" stub).
func isNative(p string) bool {
	f, err := os.Open(p) //nolint:gosec // G304: a candidate executable
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.Read(b[:]); err != nil {
		return false
	}
	switch string(b[:]) {
	case "\x7fELF", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe":
		return true
	}
	return false
}

// HomeFor is the managed home of harness name for workdir under base: one
// per harness and project, so sessions and transcripts of one project are
// not visible to an agent working on another.
func HomeFor(base, name, workdir string) string {
	sum := sha256.Sum256([]byte(workdir))
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, filepath.Base(workdir))
	if len(slug) > 40 {
		slug = slug[:40]
	}
	return filepath.Join(base, name, slug+"-"+hex.EncodeToString(sum[:])[:12])
}

// Expand replaces {home}, {run} (the bridge's read-only directory) and
// {workdir}.
func Expand(s, home, run, workdir string) string {
	return strings.NewReplacer("{home}", home, "{run}", run, "{workdir}", workdir).Replace(s)
}

// APIHost parses an --api-base URL into the host its key is sent to and
// the network.allow entry for it (host:port when the port is not 443).
func APIHost(base string) (host, allow string, err error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", "", errors.New("--api-base: not a URL")
	}
	if u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		// Redacted: the URL may carry a password.
		return "", "", fmt.Errorf("--api-base %q: want an http(s) URL without credentials", u.Redacted())
	}
	host, allow = u.Hostname(), u.Hostname()
	if p := u.Port(); p != "" && p != "443" {
		allow = u.Host
	}
	return host, allow, nil
}

// HookGroups builds the hooks object Claude Code, Codex and Gemini CLI share:
// event → [{matcher, hooks: [{type: command, command}]}].
func HookGroups(events map[string]string) map[string]any {
	out := make(map[string]any, len(events))
	for ev, cmd := range events {
		out[ev] = []any{map[string]any{
			"matcher": "*",
			"hooks":   []any{map[string]any{"type": "command", "command": cmd, "timeout": 30}},
		}}
	}
	return out
}

// JSONFile marshals v as an indented JSON bridge file.
func JSONFile(path string, v any) (File, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return File{}, fmt.Errorf("harness: %s: %w", path, err)
	}
	return File{Path: path, Data: append(b, '\n'), Mode: 0o444}, nil
}

// HookCommand is the shell command line a harness runs for one hook event.
func (in *BridgeInput) HookCommand(dialect, event string) string {
	return shellQuote(in.Self) + " __child hook " + dialect + " " + event + " " + shellQuote(in.Config)
}

// HookArgv is HookCommand as an argument vector.
func (in *BridgeInput) HookArgv(dialect, event string) []string {
	return []string{in.Self, "__child", "hook", dialect, event, in.Config}
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
