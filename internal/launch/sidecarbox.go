package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/skills"
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
	// Network, from the manifest, puts the sidecar in an empty network
	// namespace whose only way out is its own egress proxy under these
	// rules; warden reaches it through a Unix socket in ExposeDir that PID
	// 1 relays to 127.0.0.1:SIDECAR_PORT inside. Nil shares the host's
	// network.
	Network   *skills.SidecarNetwork `json:"network,omitempty"`
	ExposeDir string                 `json:"expose_dir,omitempty"`
	// Backend is the session's: bwrap, or landlock where namespaces are
	// unavailable (then the sidecar cannot have network rules).
	Backend policy.Backend `json:"backend"`
}

// Inside a sidecar's sandbox: where its Unix socket is served.
const (
	innerExposeDir  = "/run/warden/expose"
	exposeSocket    = "http.sock"
	sidecarPortName = "SIDECAR_PORT"
)

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
	mode := policy.ModeSandbox
	backend := box.Backend
	switch backend {
	case policy.BackendBwrap:
	case policy.BackendLandlock:
		if box.Network != nil {
			return 125, errors.New("a sidecar with network rules runs in a network namespace of its own, which the landlock backend cannot give (see warden doctor)")
		}
	default:
		return 125, fmt.Errorf("sidecars run in a bwrap or landlock sandbox, not %q", backend)
	}
	// The data dir is the workdir and program state: no project
	// placeholders (under the landlock backend they would also keep the
	// sidecar from creating files at its top).
	layer := policy.Layer{Mode: &mode, Backend: &backend, StatePaths: []string{box.DataDir}, Env: &policy.EnvLayer{Passthrough: names}, Network: sidecarNetwork(box.Network)}
	plan, err := NewPlan(Options{Config: config.Options{
		NoUserFile: true, // the user's policy is the agent's, not the sidecar's
		Base:       []policy.Source{{Name: "sidecar " + box.Name, File: &policy.File{Version: 1, Layer: layer}}},
	}})
	if err != nil {
		return 125, err
	}
	sb := plan.Sandbox
	sb.Argv = box.Argv
	sb.Dir = box.Snapshot // manifests' relative paths are relative to the skill dir
	// The snapshot lives in warden's state dir, which every policy hides;
	// it is bound in read-only at its own path.
	sb.Binds = append(sb.Binds, sandbox.Bind{Src: box.Snapshot, Dst: box.Snapshot})
	if box.Network != nil {
		port := os.Getenv(sidecarPortName)
		if port == "" || box.ExposeDir == "" {
			return 125, errors.New("a confined sidecar needs SIDECAR_PORT and an expose dir")
		}
		// A restart finds the last run's socket; PID 1 must bind anew.
		if err := os.Remove(filepath.Join(box.ExposeDir, exposeSocket)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 125, err
		}
		sb.Binds = append(sb.Binds, sandbox.Bind{Src: box.ExposeDir, Dst: innerExposeDir, RW: true})
		sb.Exposes = append(sb.Exposes, sandbox.Expose{Unix: innerExposeDir + "/" + exposeSocket, TCP: "127.0.0.1:" + port})
	}
	if sb.Landlock != nil {
		sb.Landlock.FS = append(sb.Landlock.FS, landlock.PathRule{Path: box.Snapshot, Access: landlock.RO, Why: "the sidecar's approved snapshot"})
	}
	// The runner forwards SIGTERM from the supervisor's teardown.
	return plan.Run(context.Background(), Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// sidecarNetwork is the policy network layer of a sidecar's sandbox:
// filtered by its manifest's rules, or the host's network.
func sidecarNetwork(n *skills.SidecarNetwork) *policy.NetworkLayer {
	if n == nil {
		open := policy.NetOpen
		return &policy.NetworkLayer{Mode: &open}
	}
	filtered := policy.NetFiltered
	private := n.AllowPrivateDestinations
	return &policy.NetworkLayer{Mode: &filtered, Allow: n.Allow, Deny: n.Deny, Rules: n.Rules, Hosts: n.Hosts, AllowPrivateDestinations: &private}
}
