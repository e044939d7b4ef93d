package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/fsutil"
)

// ErrSnapshotModified means an approved snapshot no longer hashes to its
// approved value: something wrote to the state directory.
var ErrSnapshotModified = errors.New("skills: approved snapshot was modified")

const registryVersion = 1

// Config configures [New].
type Config struct {
	// StateDir is the host-only state directory (e.g.
	// ~/.local/state/warden). It must never be visible to the agent. The
	// registry lives in StateDir/skills.
	StateDir string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Getenv, if set, is consulted for config fields' default_from_env by
	// [Registry.Resolve]. nil leaves those defaults unused.
	Getenv func(string) string
}

// Registry records registered skills, their approvals and their non-secret
// config, in StateDir/skills/registry.json. Every change is written
// atomically under an exclusive flock, so several warden processes can
// share one state directory.
type Registry struct {
	dir    string
	now    func() time.Time
	getenv func(string) string
}

// Entry is one registered skill.
type Entry struct {
	Name         string    `json:"name"`
	Mount        string    `json:"mount,omitempty"`
	Harness      string    `json:"harness"`
	Scope        Scope     `json:"scope"`
	SourceDir    string    `json:"source_dir"`
	BundleHash   string    `json:"bundle_hash"` // at registration or last approval
	RegisteredAt time.Time `json:"registered_at"`
	// Secrets are the declared secret names; the values live in the
	// keychain, never here.
	Secrets []string `json:"secrets,omitempty"`
	// Config holds non-secret config values, validated against the manifest.
	Config   map[string]string `json:"config,omitempty"`
	Approval *Approval         `json:"approval,omitempty"`
}

// Approval is the one approved bundle of a skill.
type Approval struct {
	Hash        string    `json:"hash"`
	ApprovedAt  time.Time `json:"approved_at"`
	SnapshotDir string    `json:"snapshot_dir"`
}

// Approved is a skill that may run: its frozen snapshot and validated
// config.
type Approved struct {
	Name        string
	Mount       string
	Harness     string
	Scope       Scope
	Hash        string
	SourceDir   string
	SnapshotDir string // run the sidecar from here, never from SourceDir
	Frontmatter *Frontmatter
	Manifest    *Manifest // parsed from the snapshot
	// Config is the effective config: stored values, then
	// default_from_env, then defaults, all validated.
	Config map[string]string
	// Secrets are the manifest's secret declarations.
	Secrets []SecretSpec
}

type registryFile struct {
	Version int               `json:"version"`
	Skills  map[string]*Entry `json:"skills"`
}

// New opens the registry in cfg.StateDir, creating StateDir/skills (0700).
func New(cfg Config) (*Registry, error) {
	if !filepath.IsAbs(cfg.StateDir) {
		return nil, fmt.Errorf("skills: state dir %q is not absolute", cfg.StateDir)
	}
	dir := filepath.Join(cfg.StateDir, "skills")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	for _, d := range []string{cfg.StateDir, dir} {
		if err := checkStateDir(d); err != nil {
			return nil, err
		}
	}
	r := &Registry{dir: dir, now: cfg.Now, getenv: cfg.Getenv}
	if r.now == nil {
		r.now = time.Now
	}
	return r, nil
}

// Register records the skill in dir (symlinks resolved) for harness: its
// name, mount, bundle hash, declared secrets and config values, which must
// satisfy the manifest. Registering the same source again refreshes the
// record and keeps its approval; a name registered from another directory,
// or a mount another skill uses, is an error. Registering does not approve.
func (r *Registry) Register(dir, harness string, scope Scope, config map[string]string) (Entry, error) {
	if _, ok := harnessDirs[harness]; !ok {
		return Entry{}, fmt.Errorf("skills: unknown harness %q (want one of %v)", harness, Harnesses())
	}
	if scope != ScopeWorkdir && scope != ScopeUser {
		return Entry{}, fmt.Errorf("skills: unknown scope %q", scope)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Entry{}, fmt.Errorf("skills: %w", err)
	}
	src, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Entry{}, fmt.Errorf("skills: %w", err)
	}
	if src == r.dir || strings.HasPrefix(src, r.dir+string(filepath.Separator)) {
		return Entry{}, fmt.Errorf("skills: %s is inside the state directory", src)
	}
	// The name is the directory the user pointed at, not its link target.
	sk, err := loadSkill(src, filepath.Base(abs))
	if err != nil {
		return Entry{}, err
	}
	if err := CheckConfig(sk.Manifest, config); err != nil {
		return Entry{}, err
	}
	hash, err := BundleHash(src)
	if err != nil {
		return Entry{}, err
	}
	var out Entry
	err = r.update(func(f *registryFile) error {
		name := sk.Manifest.Name
		mount := mountOf(sk.Manifest)
		old := f.Skills[name]
		if old != nil && old.SourceDir != src {
			return fmt.Errorf("skills: %s is already registered from %s: deregister it first", name, old.SourceDir)
		}
		for _, e := range f.Skills {
			if e.Name != name && mount != "" && e.Mount == mount {
				return fmt.Errorf("skills: mount %q of %s is already used by %s", mount, name, e.Name)
			}
		}
		e := &Entry{
			Name:         name,
			Mount:        mount,
			Harness:      harness,
			Scope:        scope,
			SourceDir:    src,
			BundleHash:   hash,
			RegisteredAt: r.now().UTC(),
			Secrets:      secretNames(sk.Manifest),
			Config:       cloneMap(config),
		}
		if old != nil {
			e.Approval = old.Approval
			e.RegisteredAt = old.RegisteredAt
		}
		f.Skills[name] = e
		out = *e
		return nil
	})
	return out, err
}

// Approve freezes the skill's source tree into StateDir/skills/<name>/<hex>
// and approves it, provided the tree still hashes to hash (the value the
// user reviewed); otherwise it returns a [*DriftError] and approves
// nothing. Approving a new hash retires the previous approval and deletes
// its snapshot, so an older bundle cannot come back without a new approval.
// Stop sidecars running from the old snapshot first.
func (r *Registry) Approve(name, hash string) (Approval, error) {
	if !ValidHash(hash) {
		return Approval{}, fmt.Errorf("skills: invalid bundle hash %q (want sha256:<64 hex>)", hash)
	}
	var out Approval
	err := r.update(func(f *registryFile) error {
		e := f.Skills[name]
		if e == nil {
			return fmt.Errorf("%w: %s", ErrNotRegistered, name)
		}
		dst := r.snapshotDir(name, hash)
		if _, err := os.Lstat(dst); err == nil {
			if got, err := BundleHash(dst); err != nil || got != hash {
				return fmt.Errorf("%w: %s: remove %s and approve again", ErrSnapshotModified, name, dst)
			}
		} else {
			info, err := Snapshot(e.SourceDir, dst)
			if err != nil {
				return err
			}
			if info.Hash != hash {
				_ = RemoveTree(dst)
				return &DriftError{Name: name, Approved: hash, Current: info.Hash}
			}
		}
		sk, err := loadSkill(dst, name)
		if err != nil {
			_ = RemoveTree(dst)
			return err
		}
		if err := CheckConfig(sk.Manifest, e.Config); err != nil {
			_ = RemoveTree(dst)
			return err
		}
		mount := mountOf(sk.Manifest)
		for _, o := range f.Skills {
			if o.Name != name && mount != "" && o.Mount == mount {
				_ = RemoveTree(dst)
				return fmt.Errorf("skills: mount %q of %s is already used by %s", mount, name, o.Name)
			}
		}
		if e.Approval != nil && e.Approval.Hash != hash {
			if err := RemoveTree(r.snapshotDir(name, e.Approval.Hash)); err != nil {
				return err
			}
		}
		e.Mount = mount
		e.Secrets = secretNames(sk.Manifest)
		e.BundleHash = hash
		e.Approval = &Approval{Hash: hash, ApprovedAt: r.now().UTC(), SnapshotDir: dst}
		out = *e.Approval
		return nil
	})
	return out, err
}

// Deregister removes the skill and retires its approval, deleting its
// snapshots. Its secrets stay in the keychain.
func (r *Registry) Deregister(name string) error {
	return r.update(func(f *registryFile) error {
		if f.Skills[name] == nil {
			return fmt.Errorf("%w: %s", ErrNotRegistered, name)
		}
		if ValidName(name) {
			if err := RemoveTree(filepath.Join(r.dir, name)); err != nil {
				return err
			}
		}
		delete(f.Skills, name)
		return nil
	})
}

// SetConfig replaces the skill's stored config values after validating
// them against the manifest of its approved snapshot (or, if it is not
// approved yet, of its source).
func (r *Registry) SetConfig(name string, values map[string]string) error {
	return r.update(func(f *registryFile) error {
		e := f.Skills[name]
		if e == nil {
			return fmt.Errorf("%w: %s", ErrNotRegistered, name)
		}
		dir := e.SourceDir
		if e.Approval != nil {
			dir = r.snapshotDir(name, e.Approval.Hash)
		}
		sk, err := loadSkill(dir, name)
		if err != nil {
			return err
		}
		if err := CheckConfig(sk.Manifest, values); err != nil {
			return err
		}
		e.Config = cloneMap(values)
		return nil
	})
}

// Get returns one entry.
func (r *Registry) Get(name string) (Entry, error) {
	f, err := r.read()
	if err != nil {
		return Entry{}, err
	}
	e := f.Skills[name]
	if e == nil {
		return Entry{}, fmt.Errorf("%w: %s", ErrNotRegistered, name)
	}
	return *e, nil
}

// List returns every entry, sorted by name.
func (r *Registry) List() ([]Entry, error) {
	f, err := r.read()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(f.Skills))
	for _, k := range slices.Sorted(maps.Keys(f.Skills)) {
		out = append(out, *f.Skills[k])
	}
	return out, nil
}

// Resolve returns the approved snapshot of a registered skill. It fails
// with [ErrNotRegistered] or [ErrNotApproved]; with a [*DriftError] if the
// source tree no longer hashes to the approved value (or is gone); with
// [ErrSnapshotModified] if the snapshot itself changed; and with a
// [*ConfigError] if the stored config does not satisfy the snapshot's
// manifest or a required field is unset. Config is read only from the state
// directory, never from the workdir.
func (r *Registry) Resolve(name string) (Approved, error) {
	e, err := r.Get(name)
	if err != nil {
		return Approved{}, err
	}
	if e.Approval == nil {
		return Approved{}, fmt.Errorf("%w: %s: review it and run `warden skill approve %s`", ErrNotApproved, name, name)
	}
	hash := e.Approval.Hash
	cur, err := BundleHash(e.SourceDir)
	if err != nil {
		return Approved{}, &DriftError{Name: name, Approved: hash, Reason: "source directory unreadable: " + err.Error()}
	}
	if cur != hash {
		return Approved{}, &DriftError{Name: name, Approved: hash, Current: cur}
	}
	snap := r.snapshotDir(name, hash)
	if got, err := BundleHash(snap); err != nil || got != hash {
		return Approved{}, fmt.Errorf("%w: %s: remove %s and approve again", ErrSnapshotModified, name, snap)
	}
	sk, err := loadSkill(snap, name)
	if err != nil {
		return Approved{}, err
	}
	cfg, err := EffectiveConfig(sk.Manifest, e.Config, r.getenv)
	if err != nil {
		return Approved{}, err
	}
	a := Approved{
		Name:        name,
		Mount:       mountOf(sk.Manifest),
		Harness:     e.Harness,
		Scope:       e.Scope,
		Hash:        hash,
		SourceDir:   e.SourceDir,
		SnapshotDir: snap,
		Frontmatter: sk.Frontmatter,
		Manifest:    sk.Manifest,
		Config:      cfg,
	}
	if sk.Manifest.Sidecar != nil {
		a.Secrets = slices.Clone(sk.Manifest.Sidecar.Secrets)
	}
	return a, nil
}

// Unregistered returns the found skills that are not registered from the
// same directory: candidates the user has not vetted, possibly written by
// the agent.
func (r *Registry) Unregistered(found []Found) ([]Found, error) {
	f, err := r.read()
	if err != nil {
		return nil, err
	}
	var out []Found
	for _, fd := range found {
		e := f.Skills[fd.Name]
		if e == nil {
			out = append(out, fd)
			continue
		}
		src, err := filepath.EvalSymlinks(fd.Dir)
		if err != nil || src != e.SourceDir {
			out = append(out, fd)
		}
	}
	return out, nil
}

// snapshotDir is computed from the name and hash, never read from the
// registry file.
func (r *Registry) snapshotDir(name, hash string) string {
	return filepath.Join(r.dir, name, strings.TrimPrefix(hash, HashPrefix))
}

func mountOf(m *Manifest) string {
	if m.Sidecar == nil {
		return ""
	}
	return m.Sidecar.Mount
}

func secretNames(m *Manifest) []string {
	if m.Sidecar == nil {
		return nil
	}
	var out []string
	for _, s := range m.Sidecar.Secrets {
		out = append(out, s.Name)
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

func (r *Registry) path() string { return filepath.Join(r.dir, "registry.json") }

// read loads the registry under a shared lock.
func (r *Registry) read() (*registryFile, error) {
	unlock, err := lockFile(filepath.Join(r.dir, "registry.lock"), false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.load()
}

// update runs a read-modify-write of the registry under the exclusive
// lock; nothing is written if mod fails.
func (r *Registry) update(mod func(*registryFile) error) error {
	unlock, err := lockFile(filepath.Join(r.dir, "registry.lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := r.load()
	if err != nil {
		return err
	}
	if err := mod(f); err != nil {
		return err
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("skills: encode registry: %w", err)
	}
	return writeFileAtomic(r.path(), append(data, '\n'))
}

// load reads and checks registry.json strictly; a missing file is empty.
func (r *Registry) load() (*registryFile, error) {
	p := r.path()
	f := &registryFile{Version: registryVersion, Skills: map[string]*Entry{}}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("skills: %s is not a regular file", p)
	}
	data, err := readLimited(p, 16<<20)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("skills: %s: %w", p, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("skills: %s: trailing data", p)
	}
	if f.Version != registryVersion {
		return nil, fmt.Errorf("skills: %s: unsupported version %d", p, f.Version)
	}
	if f.Skills == nil {
		f.Skills = map[string]*Entry{}
	}
	for k, e := range f.Skills {
		switch {
		case e == nil || e.Name != k || !ValidName(k):
			return nil, fmt.Errorf("skills: %s: bad entry %q", p, k)
		case !filepath.IsAbs(e.SourceDir):
			return nil, fmt.Errorf("skills: %s: %s: source dir is not absolute", p, k)
		case e.Approval != nil && !ValidHash(e.Approval.Hash):
			return nil, fmt.Errorf("skills: %s: %s: bad approval hash", p, k)
		}
	}
	return f, nil
}

// writeFileAtomic replaces p with data, 0600.
func writeFileAtomic(p string, data []byte) error {
	if err := fsutil.WriteFileAtomic(p, data, 0o600); err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	return nil
}
