package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
)

// SidecarBox is the sandbox a skill's sidecar runs in: a sidecar holds
// secrets and is code someone else wrote, so it sees the system dirs, its
// approved snapshot (read-only; it starts there) and its own data dir
// (writable), never the user's home or the agent's project. It shares the
// host's network, as REST sidecars call their APIs and the facade reaches
// them on loopback. It travels to `warden __child sidecar FILE` as a 0600
// file in the session's runtime dir (it holds no secret: those are in the
// environment).
type SidecarBox struct {
	Name     string   `json:"name"`
	Snapshot string   `json:"snapshot"`
	DataDir  string   `json:"data_dir"`
	Argv     []string `json:"argv"`
}

// SidecarDataDir is a skill's writable data dir:
// $XDG_DATA_HOME/warden-skill-data/NAME.
func SidecarDataDir(name string) (string, error) {
	base, err := HarnessDataDir()
	if err != nil {
		return "", err
	}
	d := filepath.Join(filepath.Dir(base), "warden-skill-data", name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("launch: sidecar data dir: %w", err)
	}
	return d, nil
}

// sidecarWrap returns the supervisor's Wrap for one sidecar: the argv
// becomes `warden __child sidecar BOXFILE`.
func sidecarWrap(self, runtimeDir string, box SidecarBox) func([]string) []string {
	path := filepath.Join(runtimeDir, "sidecar-"+box.Name+".json")
	return func(argv []string) []string {
		box.Argv = argv
		b, err := json.Marshal(box)
		if err == nil {
			err = os.WriteFile(path, b, 0o600)
		}
		if err != nil {
			// The child reports the missing file; the supervisor logs it.
			_ = os.Remove(path)
		}
		return []string{self, "__child", "sidecar", path}
	}
}

// SidecarMain is `warden __child sidecar BOXFILE`, started by the sidecar
// supervisor on the host: it sandboxes the sidecar as BOXFILE says and
// exits with its status.
func SidecarMain() int {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "warden: usage: warden __child sidecar BOXFILE")
		return 125
	}
	code, err := runSidecarBox(os.Args[3])
	if err != nil {
		fmt.Fprintf(os.Stderr, "warden: sidecar sandbox: %v\n", err)
	}
	return code
}

func runSidecarBox(file string) (int, error) {
	b, err := os.ReadFile(file) //nolint:gosec // G304: the supervisor's file in our runtime dir
	if err != nil {
		return 125, err
	}
	var box SidecarBox
	if err := json.Unmarshal(b, &box); err != nil {
		return 125, err
	}
	if len(box.Argv) == 0 || box.Snapshot == "" || box.DataDir == "" {
		return 125, errors.New("incomplete sidecar box")
	}
	if err := os.Chdir(box.DataDir); err != nil {
		return 125, err
	}
	// The sidecar's environment (secrets included) is exactly what the
	// supervisor gave this process; pass every variable through, minus
	// the danger blocklist, which always wins.
	var names []string
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	open := policy.NetOpen
	mode := policy.ModeSandbox
	layer := policy.Layer{Mode: &mode, Env: &policy.EnvLayer{Passthrough: names}, Network: &policy.NetworkLayer{Mode: &open}}
	plan, err := NewPlan(Options{Config: config.Options{
		NoUserFile: true, // the user's policy is the agent's, not the sidecar's
		Base:       []policy.Source{{Name: "sidecar " + box.Name, File: &policy.File{Version: 1, Layer: layer}}},
	}})
	if err != nil {
		return 125, err
	}
	if plan.Backend != policy.BackendBwrap {
		return 125, fmt.Errorf("sidecars run in a bwrap sandbox; this machine offers %s (see warden doctor)", plan.Backend)
	}
	sb := plan.Sandbox
	sb.Argv = box.Argv
	sb.Dir = box.Snapshot // manifests' relative paths are relative to the skill dir
	// The snapshot lives in warden's state dir, which every policy hides;
	// it is bound in read-only at its own path.
	sb.Binds = append(sb.Binds, sandbox.Bind{Src: box.Snapshot, Dst: box.Snapshot})
	if sb.Landlock != nil {
		sb.Landlock.FS = append(sb.Landlock.FS, landlock.PathRule{Path: box.Snapshot, Access: landlock.RO, Why: "the sidecar's approved snapshot"})
	}
	// The runner forwards SIGTERM from the supervisor's teardown.
	return plan.Run(context.Background(), Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}
