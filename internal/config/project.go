package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/internal/fsutil"

	"github.com/wardenhq/warden/internal/policy"
)

// ProjectFile is a project's own policy, relative to its directory. It is
// honoured only once the user approved its exact content (a repository
// must not be able to loosen the sandbox it is opened in), and the sandbox
// cannot write it: .warden/ is a protected path.
const ProjectFile = ".warden/policy.yaml"

// StateDir is warden's host-only state directory ($XDG_STATE_HOME/warden
// or ~/.local/state/warden), never visible inside a sandbox.
func StateDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("config: state dir: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	dir := filepath.Join(base, "warden")
	if err := os.MkdirAll(dir, 0o700); err != nil { //nolint:gosec // G703: the user's own state directory, by their own environment
		return "", fmt.Errorf("config: state dir: %w", err)
	}
	return dir, nil
}

// Project is a project policy file found for a workdir.
type Project struct {
	Path string // absolute path of the file
	Hash string // sha256:<hex> of its content
	Data []byte
	// Approved is the hash the user approved for Path, "" for none.
	Approved string
}

// Status says whether the file is honoured.
func (p *Project) Status() string {
	switch p.Approved {
	case p.Hash:
		return "approved"
	case "":
		return "not approved"
	default:
		return "changed since approved"
	}
}

// FindProject looks for ProjectFile in workdir and its ancestors (up to
// the filesystem root, not beyond $HOME's parent). It returns nil when
// there is none.
func FindProject(workdir string) (*Project, error) {
	home, _ := os.UserHomeDir()
	for dir := filepath.Clean(workdir); ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, ProjectFile)
		b, err := os.ReadFile(p)
		switch {
		case err == nil:
			sum := sha256.Sum256(b)
			pr := &Project{Path: p, Hash: "sha256:" + hex.EncodeToString(sum[:]), Data: b}
			approvals, err := loadApprovals()
			if err != nil {
				return nil, err
			}
			pr.Approved = approvals[p]
			return pr, nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("config: %w", err)
		}
		if parent := filepath.Dir(dir); parent == dir || (home != "" && dir == home) {
			return nil, nil
		}
	}
}

func approvalsPath() (string, error) {
	d, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "approved-projects.json"), nil
}

func loadApprovals() (map[string]string, error) {
	p, err := approvalsPath()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p) //nolint:gosec // G304: our own state file
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: approvals: %w", err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("config: approvals %s: %w", p, err)
	}
	return m, nil
}

// Approve pins the project file's current content; Revoke forgets it.
func Approve(p *Project) error { return setApproval(p.Path, p.Hash) }

// Revoke removes the approval of the project file at path.
func Revoke(path string) error { return setApproval(path, "") }

func setApproval(path, hash string) error {
	m, err := loadApprovals()
	if err != nil {
		return err
	}
	if hash == "" {
		delete(m, path)
	} else {
		m[path] = hash
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("config: approvals: %w", err)
	}
	ap, err := approvalsPath()
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(ap, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("config: approvals: %w", err)
	}
	return nil
}

// projectSource returns the project layer when approved, or a notice
// saying why it is ignored.
func projectSource(workdir string) (*policy.Source, string, error) {
	pr, err := FindProject(workdir)
	if err != nil || pr == nil {
		return nil, "", err
	}
	if pr.Status() != "approved" {
		return nil, fmt.Sprintf("ignoring project policy %s (%s); review it and run: warden policy approve", pr.Path, pr.Status()), nil
	}
	f, err := policy.Parse(pr.Path, pr.Data)
	if err != nil {
		return nil, "", err
	}
	return &policy.Source{Name: "project file " + pr.Path + " (approved " + pr.Hash[:19] + ")", File: f}, "", nil
}
