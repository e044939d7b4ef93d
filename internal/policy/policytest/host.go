// Package policytest provides a fake policy.Host for tests that must run
// on any OS without touching the real filesystem.
package policytest

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/policy"
)

// Host is an in-memory machine. Paths are absolute and slash-separated.
type Host struct {
	HomeDir string
	Dir     string
	Env     []string
	// Files maps a path to its content; Dirs lists directories; Links maps
	// a path to a symlink target. Parents are implied.
	Files map[string]string
	Dirs  []string
	Links map[string]string
}

var _ policy.Host = (*Host)(nil)

// Home implements policy.Host.
func (h *Host) Home() string { return h.HomeDir }

// Workdir implements policy.Host.
func (h *Host) Workdir() string { return h.Dir }

// LookupEnv implements policy.Host.
func (h *Host) LookupEnv(name string) (string, bool) {
	for _, kv := range h.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Environ implements policy.Host.
func (h *Host) Environ() []string { return h.Env }

func (h *Host) isDir(p string) bool {
	if p == "/" || slices.Contains(h.Dirs, p) {
		return true
	}
	prefix := p + "/"
	for f := range h.Files {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	for _, d := range h.Dirs {
		if strings.HasPrefix(d, prefix) {
			return true
		}
	}
	for l := range h.Links {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// EvalSymlinks implements policy.Host.
func (h *Host) EvalSymlinks(p string) (string, error) {
	p = path.Clean(p)
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i := 0; i < len(parts); i++ {
		if parts[i] == "" {
			continue
		}
		next := path.Join(cur, parts[i])
		if t, ok := h.Links[next]; ok {
			if !path.IsAbs(t) {
				t = path.Join(cur, t)
			}
			rest := append(strings.Split(strings.TrimPrefix(path.Clean(t), "/"), "/"), parts[i+1:]...)
			parts = rest
			cur = "/"
			i = -1
			continue
		}
		if _, ok := h.Files[next]; !ok && !h.isDir(next) {
			return "", &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
		}
		cur = next
	}
	return cur, nil
}

type info struct {
	name string
	mode fs.FileMode
	size int64
}

func (i info) Name() string       { return i.name }
func (i info) Size() int64        { return i.size }
func (i info) Mode() fs.FileMode  { return i.mode }
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.mode.IsDir() }
func (i info) Sys() any           { return nil }

// Lstat implements policy.Host.
func (h *Host) Lstat(p string) (fs.FileInfo, error) {
	p = path.Clean(p)
	if _, ok := h.Links[p]; ok {
		return info{name: path.Base(p), mode: fs.ModeSymlink | 0o777}, nil
	}
	// A parent symlink is followed, as the kernel would.
	if rp, err := h.EvalSymlinks(path.Dir(p)); err == nil && rp != path.Dir(p) {
		return h.Lstat(path.Join(rp, path.Base(p)))
	}
	if c, ok := h.Files[p]; ok {
		return info{name: path.Base(p), mode: 0o644, size: int64(len(c))}, nil
	}
	if h.isDir(p) {
		return info{name: path.Base(p), mode: fs.ModeDir | 0o755}, nil
	}
	return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
}

// Readlink implements policy.Host.
func (h *Host) Readlink(p string) (string, error) {
	if t, ok := h.Links[path.Clean(p)]; ok {
		return t, nil
	}
	return "", &fs.PathError{Op: "readlink", Path: p, Err: fs.ErrInvalid}
}

type entry struct{ info }

func (e entry) Type() fs.FileMode          { return e.mode.Type() }
func (e entry) Info() (fs.FileInfo, error) { return e.info, nil }

// ReadDir implements policy.Host.
func (h *Host) ReadDir(p string) ([]fs.DirEntry, error) {
	p = path.Clean(p)
	if !h.isDir(p) {
		return nil, &fs.PathError{Op: "readdir", Path: p, Err: fs.ErrNotExist}
	}
	seen := map[string]bool{}
	prefix := p + "/"
	if p == "/" {
		prefix = "/"
	}
	var names []string
	collect := func(q string) {
		if rest, ok := strings.CutPrefix(q, prefix); ok && rest != "" {
			n, _, _ := strings.Cut(rest, "/")
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for f := range h.Files {
		collect(f)
	}
	for _, d := range h.Dirs {
		collect(d)
	}
	for l := range h.Links {
		collect(l)
	}
	slices.Sort(names)
	out := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		fi, err := h.Lstat(path.Join(p, n))
		if err != nil {
			continue
		}
		out = append(out, entry{fi.(info)})
	}
	return out, nil
}

// Readable implements policy.Host: the fake machine's user is root, who
// can read everything.
func (h *Host) Readable(string) bool { return true }

// ReadFile implements policy.Host.
func (h *Host) ReadFile(p string) ([]byte, error) {
	rp, err := h.EvalSymlinks(p)
	if err != nil {
		return nil, err
	}
	if c, ok := h.Files[rp]; ok {
		return []byte(c), nil
	}
	return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
}

// Debian returns a typical Debian 12 machine with a project at
// /home/dev/src/app (a git repository) and some secrets in $HOME.
func Debian() *Host {
	return &Host{
		HomeDir: "/home/dev",
		Dir:     "/home/dev/src/app",
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/dev", "LANG=C.UTF-8", "TERM=xterm-256color",
			"USER=dev", "AWS_SECRET_ACCESS_KEY=hunter2", "LD_PRELOAD=/evil.so", "GOPATH=/home/dev/go",
			"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "LC_ALL=C.UTF-8",
		},
		Dirs: []string{
			"/usr/bin", "/usr/lib", "/usr/lib64", "/etc", "/opt", "/home/dev/.cache", "/home/dev/.cargo/bin",
			"/home/dev/src/app/.git/hooks", "/home/dev/src/app/.git/objects", "/home/dev/src/app/.github",
			"/home/dev/src/app/.venv",
		},
		Files: map[string]string{
			"/etc/passwd": "", "/etc/shadow": "", "/etc/resolv.conf": "",
			"/home/dev/.ssh/id_ed25519": "key", "/home/dev/.aws/credentials": "key", "/home/dev/.bashrc": "",
			"/home/dev/.gitconfig":           "",
			"/home/dev/src/app/.git/config":  "",
			"/home/dev/src/app/.git/HEAD":    "ref: refs/heads/main\n",
			"/home/dev/src/app/.env":         "TOKEN=x",
			"/home/dev/src/app/.gitignore":   "",
			"/home/dev/src/app/.mcp.json":    "{}",
			"/home/dev/src/app/main.go":      "package main",
			"/home/dev/src/app/.DS_Store":    "",
			"/home/dev/src/app/.envrc":       "export X=1",
			"/home/dev/src/app/.npmrc":       "",
			"/home/dev/src/app/.claude/x.md": "",
		},
		Links: map[string]string{"/bin": "usr/bin", "/lib": "usr/lib", "/lib64": "usr/lib64", "/sbin": "usr/sbin"},
	}
}
