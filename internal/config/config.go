// Package config finds and reads policy files and layers them with the
// built-in defaults and command-line flags. It is the I/O side of package
// policy.
package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/policy"
)

// Options select the layers.
type Options struct {
	// PolicyFile is --policy; empty for none.
	PolicyFile string
	// Profile is --profile.
	Profile string
	// Flags is the layer built from command-line flags.
	Flags *policy.Layer
	// NoUserFile skips ~/.config/warden/policy.yaml (tests).
	NoUserFile bool
	// Project, when set, is the workdir whose approved project policy
	// (ProjectFile) is layered between the user's file and --policy;
	// Notice receives why an unapproved one is ignored.
	Project string
	Notice  func(string)
	// Base are layers between the built-in defaults and the user's file,
	// such as a harness's grants (`warden start`): the user's policy can
	// narrow them, and deny always wins.
	Base []policy.Source
}

// UserFile is the user's policy file path.
func UserFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	return filepath.Join(dir, "warden", "policy.yaml"), nil
}

// Load reads the layers and merges them.
func Load(opt Options) (*policy.Spec, error) {
	srcs := []policy.Source{{Name: "builtin", File: policy.Builtin()}}
	srcs = append(srcs, opt.Base...)
	if !opt.NoUserFile {
		if p, err := UserFile(); err == nil {
			f, err := ReadFile(p)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return nil, err
			default:
				srcs = append(srcs, policy.Source{Name: "user file " + p, File: f})
			}
		}
	}
	if opt.Project != "" {
		src, notice, err := projectSource(opt.Project)
		if err != nil {
			return nil, err
		}
		if src != nil {
			srcs = append(srcs, *src)
		}
		if notice != "" && opt.Notice != nil {
			opt.Notice(notice)
		}
	}
	if opt.PolicyFile != "" {
		f, err := ReadFile(opt.PolicyFile)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, policy.Source{Name: "policy file " + opt.PolicyFile, File: f})
	}
	return policy.Merge(policy.MergeInput{Sources: srcs, Profile: opt.Profile, Flags: opt.Flags})
}

// ReadFile reads and parses one policy file ("-" is stdin).
func ReadFile(path string) (*policy.File, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20+1))
	} else {
		b, err = os.ReadFile(path) //nolint:gosec // G304: reading the policy the user named is the point
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return policy.Parse(path, b)
}

// OSHost is the real machine as policy.Resolve sees it.
type OSHost struct {
	HomeDir string
	Dir     string
	Env     []string
}

// NewOSHost captures the current process's home, working directory and
// environment.
func NewOSHost() (*OSHost, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &OSHost{HomeDir: home, Dir: wd, Env: os.Environ()}, nil
}

var _ policy.Host = (*OSHost)(nil)

// Home implements policy.Host.
func (h *OSHost) Home() string { return h.HomeDir }

// Workdir implements policy.Host.
func (h *OSHost) Workdir() string { return h.Dir }

// LookupEnv implements policy.Host.
func (h *OSHost) LookupEnv(name string) (string, bool) {
	for _, v := range slices.Backward(h.Env) {
		if k, v, ok := cut(v); ok && k == name {
			return v, true
		}
	}
	return "", false
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}

// Environ implements policy.Host.
func (h *OSHost) Environ() []string { return h.Env }

// EvalSymlinks implements policy.Host.
func (h *OSHost) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }

// Lstat implements policy.Host.
func (h *OSHost) Lstat(p string) (fs.FileInfo, error) { return os.Lstat(p) }

// Readlink implements policy.Host.
func (h *OSHost) Readlink(p string) (string, error) { return os.Readlink(p) }

// ReadDir implements policy.Host.
func (h *OSHost) ReadDir(p string) ([]fs.DirEntry, error) { return os.ReadDir(p) }

// Readable implements policy.Host.
func (h *OSHost) Readable(p string) bool { return unix.Access(p, unix.R_OK) == nil }

// ReadFile implements policy.Host.
func (h *OSHost) ReadFile(p string) ([]byte, error) {
	f, err := os.Open(p) //nolint:gosec // G304: paths come from the policy resolver
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<10))
}
