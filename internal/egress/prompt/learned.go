package prompt

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/fsutil"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/publicsuffix"

	"github.com/wardenhq/warden/internal/egress"
)

// Decisions as stored.
const (
	Allow = "allow"
	Deny  = "deny"
)

// ScopeGlobal is the scope of a decision that applies in every project.
const ScopeGlobal = "global"

// learnedVersion is the file format version.
const learnedVersion = 1

// Entry is one remembered decision.
type Entry struct {
	Host string `yaml:"host" json:"host"`                     // normalised host name or IP
	Port int    `yaml:"port,omitempty" json:"port,omitempty"` // 0: every port
	// Subdomains extends the entry to every name under Host (a site:
	// api.example.com and www.example.com for example.com).
	Subdomains bool   `yaml:"subdomains,omitempty" json:"subdomains,omitempty"`
	Decision   string `yaml:"decision" json:"decision"` // allow or deny
	// Scope is ScopeGlobal or the absolute project directory (the
	// session's workdir) the decision applies to.
	Scope string    `yaml:"scope" json:"scope"`
	Time  time.Time `yaml:"time" json:"time"` // when it was remembered
}

// Target is the entry's destination: "host", "host:port" or "[v6]:port".
func (e Entry) Target() string {
	h := e.Host
	if e.Subdomains {
		h = "*." + h
	}
	if e.Port == 0 {
		return h
	}
	if strings.IndexByte(h, ':') >= 0 {
		h = "[" + h + "]"
	}
	return fmt.Sprintf("%s:%d", h, e.Port)
}

func (e Entry) sameKey(o Entry) bool {
	return e.Host == o.Host && e.Port == o.Port && e.Scope == o.Scope && e.Subdomains == o.Subdomains
}

// covers reports whether the entry's host part applies to host.
func (e Entry) covers(host string) bool {
	return e.Host == host || (e.Subdomains && strings.HasSuffix(host, "."+e.Host))
}

// normalize checks an entry and puts it in canonical form.
func (e *Entry) normalize() error {
	h, err := egress.NormalizeHost(e.Host)
	if err != nil {
		return err
	}
	e.Host = h
	if site, ok := Site(h); e.Subdomains && (!ok || site != h) {
		return fmt.Errorf("%s: subdomains only for a site (a registrable domain such as example.com)", e.Host)
	}
	if e.Port < 0 || e.Port > 65535 {
		return fmt.Errorf("%s: port %d out of range", e.Host, e.Port)
	}
	if e.Decision != Allow && e.Decision != Deny {
		return fmt.Errorf("%s: invalid decision %q (want allow or deny)", e.Target(), e.Decision)
	}
	switch {
	case e.Scope == "":
		e.Scope = ScopeGlobal
	case e.Scope == ScopeGlobal:
	case filepath.IsAbs(e.Scope):
		e.Scope = filepath.Clean(e.Scope)
	default:
		return fmt.Errorf("%s: invalid scope %q (want global or an absolute directory)", e.Target(), e.Scope)
	}
	return nil
}

type learnedFile struct {
	Version   int     `yaml:"version"`
	Decisions []Entry `yaml:"decisions"`
}

// Learned is the file of remembered decisions, shared by every session of
// the user. Reads see the latest file; each write takes an exclusive flock
// on a sibling lock file, re-reads, merges and replaces the file
// atomically (mode 0600), so concurrent sessions never lose each other's
// decisions. It is safe for concurrent use.
type Learned struct {
	path string

	mu      sync.Mutex
	entries []Entry
	stamp   os.FileInfo // of the file entries were read from; nil: none
}

// DefaultPath is $XDG_CONFIG_HOME/warden/learned-network.yaml (the
// directory of the user policy file; ~/.config on Linux).
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("prompt: learned decisions: %w", err)
	}
	return filepath.Join(dir, "warden", "learned-network.yaml"), nil
}

// OpenLearned loads the store at path; a missing file is an empty store.
// An invalid file is an error (it is never silently replaced).
func OpenLearned(path string) (*Learned, error) {
	l := &Learned{path: path}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refreshLocked(); err != nil {
		return nil, err
	}
	return l, nil
}

// Path is the file's path.
func (l *Learned) Path() string { return l.path }

// Entries returns the remembered decisions, re-reading the file if another
// session changed it.
func (l *Learned) Entries() ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refreshLocked(); err != nil {
		return nil, err
	}
	return slices.Clone(l.entries), nil
}

// Lookup returns the remembered decision for host:port in scope: entries
// for the host on that port or on every port, in that scope or globally.
// Deny wins over allow, as in the policy. ok is false when none applies.
func (l *Learned) Lookup(host string, port int, scope string) (e Entry, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refreshLocked(); err != nil {
		return Entry{}, false, err
	}
	for _, c := range l.entries {
		if !c.covers(host) || (c.Port != 0 && c.Port != port) || (c.Scope != ScopeGlobal && c.Scope != scope) {
			continue
		}
		if !ok || (c.Decision == Deny && e.Decision != Deny) {
			e, ok = c, true
		}
	}
	return e, ok, nil
}

// Remember stores e, replacing any entry for the same host, port and
// scope. A zero Time is set to now.
func (l *Learned) Remember(e Entry) error {
	if err := e.normalize(); err != nil {
		return fmt.Errorf("prompt: remember: %w", err)
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC().Truncate(time.Second)
	}
	return l.update(func(es []Entry) []Entry {
		es = slices.DeleteFunc(es, e.sameKey)
		return append(es, e)
	})
}

// Forget removes the decisions for host (port 0: on every port, else only
// the entries naming that port) in every scope and returns them. "*.site"
// names a site entry; a plain host also removes the site entries covering
// it.
func (l *Learned) Forget(host string, port int) ([]Entry, error) {
	var removed []Entry
	site, isSite := strings.CutPrefix(host, "*.")
	err := l.update(func(es []Entry) []Entry {
		return slices.DeleteFunc(es, func(c Entry) bool {
			match := c.covers(host)
			if isSite {
				match = c.Subdomains && c.Host == site
			}
			if match && (port == 0 || c.Port == port) {
				removed = append(removed, c)
				return true
			}
			return false
		})
	})
	if err != nil {
		return nil, err
	}
	return removed, nil
}

// refreshLocked re-reads the file when it changed since the last read.
func (l *Learned) refreshLocked() error {
	fi, err := os.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		l.entries, l.stamp = nil, nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("prompt: learned decisions: %w", err)
	}
	if l.stamp != nil && os.SameFile(l.stamp, fi) && l.stamp.ModTime().Equal(fi.ModTime()) && l.stamp.Size() == fi.Size() {
		return nil
	}
	es, fi, err := readLearned(l.path)
	if err != nil {
		return err
	}
	l.entries, l.stamp = es, fi
	return nil
}

// update applies fn to the current file contents under the lock and
// writes the result.
func (l *Learned) update(fn func([]Entry) []Entry) error {
	dir := filepath.Dir(l.path)
	if err := os.MkdirAll(dir, 0o700); err != nil { //nolint:gosec // G703: the user's own config directory, by their own environment
		return fmt.Errorf("prompt: learned decisions: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	unlock, err := lockFile(l.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	es, _, err := readLearned(l.path)
	if err != nil {
		return err
	}
	es = fn(es)
	slices.SortStableFunc(es, func(a, b Entry) int {
		return cmp.Or(strings.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port), strings.Compare(a.Scope, b.Scope))
	})
	if err := writeLearned(l.path, es); err != nil {
		return err
	}
	// The next read refreshes the stamp from the new file.
	l.entries, l.stamp = es, nil
	return nil
}

// readLearned parses the file strictly; a missing file is empty.
func readLearned(path string) ([]Entry, os.FileInfo, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the user's own config file
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("prompt: learned decisions: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("prompt: learned decisions: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, 8<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("prompt: learned decisions: %w", err)
	}
	var lf learnedFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&lf); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("prompt: %s: %w", path, err)
	}
	if len(bytes.TrimSpace(b)) > 0 && lf.Version != learnedVersion {
		return nil, nil, fmt.Errorf("prompt: %s: unsupported version %d (want %d)", path, lf.Version, learnedVersion)
	}
	for i := range lf.Decisions {
		if err := lf.Decisions[i].normalize(); err != nil {
			return nil, nil, fmt.Errorf("prompt: %s: decision %d: %w", path, i+1, err)
		}
	}
	return lf.Decisions, fi, nil
}

// writeLearned replaces the file atomically: a 0600 temporary file in the
// same directory, synced, then renamed over it.
func writeLearned(path string, es []Entry) error {
	var buf bytes.Buffer
	buf.WriteString("# Network decisions remembered by warden (network.on_unknown: ask).\n# List with `warden net learned`; remove with `warden net forget HOST[:PORT]`.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(learnedFile{Version: learnedVersion, Decisions: es}); err != nil {
		return fmt.Errorf("prompt: learned decisions: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("prompt: learned decisions: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("prompt: learned decisions: %w", err)
	}
	return nil
}

// Site is the registrable domain of host (example.com for api.example.com,
// example.co.uk for www.example.co.uk), by the public suffix list; ok is
// false when host has none (an IP, a single label, a public suffix).
func Site(host string) (site string, ok bool) {
	if net.ParseIP(host) != nil {
		return "", false
	}
	s, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return "", false
	}
	return s, true
}
