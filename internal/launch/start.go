package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/harness"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
	"github.com/wardenhq/warden/internal/skills"
)

// InnerHarnessDir is the in-sandbox directory of a harness's read-only
// bridge files (warden's tmpfs, not the agent's).
const InnerHarnessDir = "/run/warden/harness"

// StartOptions describe `warden start`.
type StartOptions struct {
	Options
	Harness *harness.Descriptor
	// Args are the user's arguments for the harness.
	Args []string
	// APIBase points the harness's model API at another URL (a gateway,
	// a local model server).
	APIBase string
	// Store is consulted for model API keys; nil opens the keychain.
	Store secrets.Store
}

// HarnessPlan is what `warden start` adds to a launch.
type HarnessPlan struct {
	Harness *harness.Descriptor
	Found   *harness.Found
	// Home is the managed home (the same path inside and outside).
	Home string
	// Keys are the model API keys and where each comes from.
	Keys []KeySource
	// Bridge is the harness's extension; Config the file its hooks read.
	Bridge *harness.Bridge
	Config harness.BridgeConfig
	// Skills are read-only binds of approved skills into the harness's
	// skill directories.
	Skills []sandbox.Bind
	// Notes are things the user should know (a key that is missing).
	Notes []string
}

// KeySource is one model API key and where warden takes it from.
type KeySource struct {
	harness.Key
	// Source is "secret store", "environment" or "" (not available).
	Source string
}

// HarnessDataDir is where managed harness homes live:
// $XDG_DATA_HOME/warden-harness (~/.local/share/warden-harness).
func HarnessDataDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("launch: data dir: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "warden-harness"), nil
}

// NpmRoots are the global node_modules directories to search for a
// harness: $WARDEN_NPM_ROOT, $NPM_CONFIG_PREFIX, node's own prefix and
// ~/.npm-global.
func NpmRoots() []string {
	var roots []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(roots, p) {
			roots = append(roots, p)
		}
	}
	for r := range strings.SplitSeq(os.Getenv("WARDEN_NPM_ROOT"), string(filepath.ListSeparator)) {
		add(r)
	}
	if p := os.Getenv("NPM_CONFIG_PREFIX"); p != "" {
		add(filepath.Join(p, "lib", "node_modules"))
	}
	for dir := range strings.SplitSeq(os.Getenv("PATH"), string(filepath.ListSeparator)) {
		if node := filepath.Join(dir, "node"); dir != "" && isFile(node) {
			if real, err := filepath.EvalSymlinks(node); err == nil {
				add(filepath.Join(filepath.Dir(filepath.Dir(real)), "lib", "node_modules"))
			}
			break
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(filepath.Join(home, ".npm-global", "lib", "node_modules"))
	}
	return roots
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// FindHarness locates d's executable on this machine.
func FindHarness(d *harness.Descriptor) (*harness.Found, error) {
	return d.Find(harness.Env{Path: os.Getenv("PATH"), NpmRoots: NpmRoots(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH})
}

// NewStartPlan plans `warden start`: the harness's grants become a policy
// layer just above the built-in defaults (the user's policy can narrow
// them; deny wins), its model API keys are injected at egress, and its
// bridge and skills are bound read-only.
func NewStartPlan(o StartOptions) (*Plan, error) {
	d := o.Harness
	found, err := FindHarness(d)
	if err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	base, err := HarnessDataDir()
	if err != nil {
		return nil, err
	}
	hp := &HarnessPlan{Harness: d, Found: found, Home: harness.HomeFor(base, d.Name, wd)}
	// The home must exist to be granted (and bound) at all.
	for _, dir := range append([]string{""}, d.Dirs...) {
		if err := os.MkdirAll(filepath.Join(hp.Home, dir), 0o700); err != nil {
			return nil, fmt.Errorf("launch: harness home: %w", err)
		}
	}

	layer := policy.Layer{ReadPaths: found.Roots, StatePaths: []string{hp.Home}, Env: &policy.EnvLayer{Set: map[string]string{}}}
	for k, v := range d.Env {
		layer.Env.Set[k] = harness.Expand(v, hp.Home, InnerHarnessDir, wd)
	}
	filtered := policy.NetFiltered
	net := &policy.NetworkLayer{Mode: &filtered, Allow: slices.Clone(d.APIHosts)}
	keys := d.Keys
	if o.APIBase != "" {
		host, allow, err := harness.APIHost(o.APIBase)
		if err != nil {
			return nil, &PolicyError{Err: err}
		}
		net.Allow = []string{allow}
		if len(keys) > 0 {
			k := keys[0]
			k.Host = host
			keys = []harness.Key{k}
		}
	}
	store, storeErr := o.Store, error(nil)
	if store == nil && len(keys) > 0 {
		if op, err := keychain.Open(keychain.Config{}); err != nil {
			storeErr = err
		} else {
			store = op
		}
	}
	hp.Keys, hp.Notes = keySources(keys, store, storeErr)
	for _, k := range hp.Keys {
		switch k.Source {
		case sourceStore:
			net.Credentials = append(net.Credentials, policy.Credential{Host: k.Host, Header: k.Header, Secret: k.Secret, Env: k.Env})
		case sourceEnv:
			net.Credentials = append(net.Credentials, policy.Credential{Host: k.Host, Header: k.Header, FromEnv: k.Env, Env: k.Env})
		}
	}
	layer.Network = net

	opts := o.Options
	opts.Config.Base = append(slices.Clone(opts.Config.Base), policy.Source{Name: "harness " + d.Name, File: &policy.File{Version: 1, Layer: layer}})
	plan, err := NewPlan(opts)
	if err != nil {
		return nil, err
	}
	if plan.Backend != policy.BackendBwrap {
		return nil, &PolicyError{Err: fmt.Errorf("warden start needs the bwrap backend (its bridge files are read-only binds in a mount namespace); this launch would use %s", plan.Backend)}
	}
	hp.Config = harness.BridgeConfig{Harness: d.Name, ToolsDeny: plan.Spec.ToolsDeny}
	if _, err := harness.ParseRules(hp.Config.ToolsDeny); err != nil {
		return nil, &PolicyError{Err: err}
	}
	approved, err := resolveSkills(plan.Skills)
	if err != nil {
		return nil, &PolicyError{Err: err}
	}
	plan.approved = approved
	hp.Config.Briefing = Briefing(plan, approved)
	in := &harness.BridgeInput{
		Workdir: wd, Home: hp.Home, RunDir: InnerHarnessDir, Self: sandbox.InnerSelf,
		Config: filepath.Join(InnerHarnessDir, "bridge.json"), Briefing: hp.Config.Briefing,
		APIBase: o.APIBase, KeyAvailable: len(net.Credentials) > 0,
	}
	if hp.Bridge, err = d.Bridge(in); err != nil {
		return nil, err
	}
	for _, a := range approved {
		for _, dir := range d.SkillDirs {
			hp.Skills = append(hp.Skills, sandbox.Bind{Src: a.SnapshotDir, Dst: filepath.Join(skillDir(dir, hp.Home, plan.Resolved.Home), a.Name)})
		}
	}
	args := o.Args
	if d.Args != nil {
		args = d.Args(args)
	}
	plan.Sandbox.Argv = slices.Concat(found.Argv, hp.Bridge.Args, args)
	for k, v := range hp.Bridge.Env {
		plan.Sandbox.Env = append(plan.Sandbox.Env, k+"="+v)
	}
	slices.Sort(plan.Sandbox.Env)
	plan.Harness = hp
	if store != nil {
		plan.store = store // the session reuses it: one key derivation
	}
	return plan, nil
}

func skillDir(dir, home, sandboxHome string) string {
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		return filepath.Join(sandboxHome, rest)
	}
	return filepath.Join(home, dir)
}

const (
	sourceStore = "secret store"
	sourceEnv   = "environment"
)

// keySources finds each key in warden's secret store (scope net), else in
// warden's own environment. Neither value ever enters the sandbox.
func keySources(keys []harness.Key, store secrets.Store, storeErr error) ([]KeySource, []string) {
	var notes []string
	out := make([]KeySource, 0, len(keys))
	found := false
	for _, k := range keys {
		ks := KeySource{Key: k}
		if store != nil {
			_, err := store.Get(secrets.ServiceForSkill(CredentialScope), k.Secret)
			switch {
			case err == nil:
				ks.Source = sourceStore
			case !errors.Is(err, secrets.ErrNotFound):
				notes = append(notes, fmt.Sprintf("secret %s/%s: %v", CredentialScope, k.Secret, err))
			}
		}
		if ks.Source == "" && os.Getenv(k.Env) != "" {
			ks.Source = sourceEnv
		}
		found = found || ks.Source != ""
		out = append(out, ks)
	}
	if storeErr != nil && !found {
		notes = append(notes, fmt.Sprintf("no model API key found: the secret store is unavailable (%v) and none of the key variables is set", storeErr))
	}
	return out, notes
}

// resolveSkills resolves the approved skills named ("all" for every one).
func resolveSkills(names []string) ([]skills.Approved, error) {
	if len(names) == 0 {
		return nil, nil
	}
	reg, err := OpenRegistry()
	if err != nil {
		return nil, err
	}
	if slices.Contains(names, "all") {
		entries, err := reg.List()
		if err != nil {
			return nil, err
		}
		names = names[:0]
		for _, e := range entries {
			names = append(names, e.Name)
		}
	}
	out := make([]skills.Approved, 0, len(names))
	for _, n := range names {
		a, err := reg.Resolve(n)
		if err != nil {
			return nil, fmt.Errorf("skill %s: %w", n, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// Briefing is warden's note to the model about the sandbox it runs in.
func Briefing(plan *Plan, approved []skills.Approved) string {
	r := plan.Resolved
	var b strings.Builder
	b.WriteString("# Working inside warden\n\n")
	b.WriteString("You run inside warden, a sandbox enforced by the operating system. Its limits are deliberate; do not try to work around them.\n\n")
	fmt.Fprintf(&b, "- The project directory %s is writable. Outside the paths the policy grants, files are invisible or read-only: writes fail with \"Read-only file system\" or \"Permission denied\". Git hooks, git config and agent configuration files are protected.\n", r.Workdir)
	switch r.Network.Mode {
	case policy.NetFiltered:
		b.WriteString("- Network access goes through warden's egress proxy (already set in HTTPS_PROXY). Hosts the policy does not allow get HTTP 403 with an X-Warden-Reason header; ask the user to allow a host rather than retrying.\n")
	case policy.NetBlocked:
		b.WriteString("- There is no network access.\n")
	case policy.NetOpen:
	}
	if deny := plan.Spec.ToolsDeny; len(deny) > 0 {
		fmt.Fprintf(&b, "- The policy refuses these tool calls: %s.\n", strings.Join(deny, ", "))
	}
	if len(approved) > 0 {
		b.WriteString("\n## Skills\n\nThese skills are available (each has a SKILL.md; their services are reached through $WARDEN_SOCKET or http://127.0.0.1:$WARDEN_PORT with $WARDEN_TOKEN):\n\n")
		for _, a := range approved {
			desc := ""
			if a.Frontmatter != nil {
				desc = a.Frontmatter.Description
			}
			fmt.Fprintf(&b, "- %s: %s\n", a.Name, desc)
		}
	}
	return b.String()
}

// prepare writes the bridge files and adds their read-only binds
// and the skill binds. Files under InnerHarnessDir live in the session's
// runtime dir; the others are written in the managed home and bound
// read-only over themselves (the home is a mount point, so it cannot be
// renamed away from under them).
func (hp *HarnessPlan) prepare(sb *sandbox.Spec) error {
	runHost := filepath.Join(sb.RuntimeDir, "harness")
	if err := os.Mkdir(runHost, 0o700); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	cfg, err := harness.JSONFile(filepath.Join(InnerHarnessDir, "bridge.json"), hp.Config)
	if err != nil {
		return err
	}
	for _, f := range append([]harness.File{cfg}, hp.Bridge.Files...) {
		host := f.Path
		if rel, ok := strings.CutPrefix(f.Path, InnerHarnessDir+"/"); ok {
			host = filepath.Join(runHost, rel)
		} else if !strings.HasPrefix(f.Path, hp.Home+"/") {
			return fmt.Errorf("launch: bridge file %s is outside the harness's directories", f.Path)
		} else {
			sb.Binds = append(sb.Binds, sandbox.Bind{Src: host, Dst: f.Path})
		}
		if err := os.MkdirAll(filepath.Dir(host), 0o700); err != nil {
			return fmt.Errorf("launch: bridge file: %w", err)
		}
		if err := writeReplace(host, f.Data, f.Mode); err != nil {
			return err
		}
	}
	if hp.Harness.Prepare != nil {
		env := map[string]string{}
		for _, kv := range sandbox.MergeEnv(sb.Policy.Env, sb.Env) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		if err := hp.Harness.Prepare(hp.Home, env); err != nil {
			return err
		}
	}
	sb.Binds = append(sb.Binds, sandbox.Bind{Src: runHost, Dst: InnerHarnessDir})
	if sb.Landlock != nil {
		sb.Landlock.FS = append(sb.Landlock.FS, landlock.PathRule{Path: InnerHarnessDir, Access: landlock.RO, Why: "harness bridge files"})
	}
	// bwrap creates the skills' mount points: in the managed home (so on
	// the host, harmlessly) or in the sandbox's throw-away $HOME (never in
	// the user's real one).
	sb.Binds = append(sb.Binds, hp.Skills...)
	return nil
}

// writeReplace writes a file, replacing a read-only one from an earlier
// session.
func writeReplace(path string, data []byte, mode fs.FileMode) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("launch: bridge file: %w", err)
	}
	if mode == 0 {
		mode = 0o444
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("launch: bridge file: %w", err)
	}
	return nil
}
