package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/buildinfo"
	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/egress/prompt"
	"github.com/wardenhq/warden/internal/harness/all"
	"github.com/wardenhq/warden/internal/launch"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
)

// DoctorOptions are `warden doctor`'s inputs.
type DoctorOptions struct {
	IO   *cliutil.IOStreams
	JSON bool
}

// NewCmdDoctor builds `warden doctor`.
func NewCmdDoctor(f *Factory, runF func(*DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what warden can enforce on this machine, and how to fix what is missing",
		Long: `Check bubblewrap, user namespaces (and, when they are blocked, why: a
sysctl, AppArmor, a container's seccomp filter — with the fix), the Landlock
ABI, seccomp and cgroup v2 delegation; say which backend auto picks and
which policy features it enforces. Exit 0 when warden can run, 4 when not.`,
		Example: "  warden doctor\n  warden doctor --json | jq .backend",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(c, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// DoctorReport is `warden doctor --json`'s stable shape (fields are only
// ever added).
type DoctorReport struct {
	Version  string              `json:"version"`
	OK       bool                `json:"ok"`
	Probe    *sandbox.Probe      `json:"checks"`
	Backend  DoctorBackend       `json:"backend"`
	Backends map[string][]string `json:"enforces"`
	// Harnesses, Prompts and Keychain are what `warden start` and the
	// egress prompts will use.
	Harnesses []DoctorHarness `json:"harnesses"`
	Prompts   DoctorFacility  `json:"prompts"`
	Keychain  DoctorFacility  `json:"keychain"`
}

// DoctorHarness is one agent harness as `warden start` would find it.
type DoctorHarness struct {
	Name    string   `json:"name"`
	Found   bool     `json:"found"`
	Path    string   `json:"path,omitempty"`
	Version string   `json:"version,omitempty"`
	Problem string   `json:"problem,omitempty"`
	Keys    []string `json:"keys"` // "ENV: source"
}

// DoctorFacility is a component and its state.
type DoctorFacility struct {
	Backend string `json:"backend"`
	Detail  string `json:"detail,omitempty"`
}

// DoctorBackend is the auto choice.
type DoctorBackend struct {
	Auto string `json:"auto"`
	Why  string `json:"why"`
}

// enforced lists what each backend enforces, for the report.
var enforced = map[string][]string{
	"bwrap": {
		"filesystem view (mount namespace): read/write grants, masked secrets and dotfiles, protected paths incl. first creation, private /tmp",
		"namespaces: user (no capabilities), pid, ipc, uts, cgroup, net (empty: loopback only)",
		"landlock: filesystem grants and IPC scopes (defence in depth)",
		"seccomp: io_uring, ptrace, bpf, keyctl, mount, new user namespaces, AF_UNIX/VSOCK/NETLINK sockets, TIOCSTI/TIOCLINUX",
		"rlimits, no_new_privs, closed descriptors, --new-session",
	},
	"landlock": {
		"filesystem: Landlock allow-list; secrets and protected paths carved out of writable trees; new top-level files in the workdir cannot be created",
		"network: Landlock TCP rules + seccomp refusing UDP, raw and AF_UNIX sockets",
		"IPC scopes: abstract Unix sockets and signals to processes outside the sandbox",
		"seccomp, rlimits, no_new_privs, closed descriptors, new session",
		"refused: mode rx (needs namespaces); not available: PID namespace (host processes are visible, not traceable)",
	},
}

func doctorRun(c *cobra.Command, o *DoctorOptions) error {
	p := sandbox.ProbeHost(c.Context(), sandbox.ProbeOptions{Full: true, LandlockABI: landlock.ABI})
	auto, why := p.Auto()
	rep := DoctorReport{Version: buildinfo.String(), OK: auto != "", Probe: p, Backend: DoctorBackend{Auto: string(auto), Why: why}, Backends: enforced}
	rep.Keychain, rep.Prompts, rep.Harnesses = doctorStart()
	if o.JSON {
		if err := cliutil.PrintJSON(o.IO.Out, rep); err != nil {
			return err
		}
	} else {
		printDoctor(o.IO.Out, rep)
	}
	if !rep.OK {
		return &cliutil.ExitError{Code: cliutil.ExitPrerequisite}
	}
	return nil
}

func printDoctor(w io.Writer, r DoctorReport) {
	p := r.Probe
	fmt.Fprintf(w, "warden %s on %s/%s, kernel %s\n", r.Version, p.OS, p.Arch, p.Kernel)
	line := func(name string, f sandbox.Feature) {
		state := "ok  "
		if !f.Usable {
			state = "NO  "
		}
		fmt.Fprintf(w, "  %s %-22s %s\n", state, name, f.Detail)
		if f.Reason != "" {
			fmt.Fprintf(w, "       why: %s\n", f.Reason)
		}
		if f.Fix != "" {
			fmt.Fprintf(w, "       fix: %s\n", f.Fix)
		}
	}
	line("bubblewrap", p.Bwrap)
	line("user namespaces", p.UserNS)
	line("landlock", p.Landlock)
	line("seccomp", p.Seccomp)
	line("cgroup v2 delegation", p.CgroupV2)
	if r.Backend.Auto == "" {
		fmt.Fprintf(w, "backend auto: none can run here (%s)\n", r.Backend.Why)
		return
	}
	fmt.Fprintf(w, "backend auto: %s (%s)\n", r.Backend.Auto, r.Backend.Why)
	for _, e := range r.Backends[r.Backend.Auto] {
		fmt.Fprintf(w, "  enforces: %s\n", e)
	}
	fmt.Fprintf(w, "keychain: %s", r.Keychain.Backend)
	if r.Keychain.Detail != "" {
		fmt.Fprintf(w, " (%s)", r.Keychain.Detail)
	}
	fmt.Fprintf(w, "\nnetwork prompts: %s", r.Prompts.Backend)
	if r.Prompts.Detail != "" {
		fmt.Fprintf(w, " (%s)", r.Prompts.Detail)
	}
	fmt.Fprintln(w, "\nharnesses (warden start NAME):")
	for _, h := range r.Harnesses {
		if !h.Found {
			fmt.Fprintf(w, "  --   %-12s %s\n", h.Name, h.Problem)
			continue
		}
		fmt.Fprintf(w, "  ok   %-12s %s %s\n", h.Name, h.Version, h.Path)
		for _, k := range h.Keys {
			fmt.Fprintf(w, "         key %s\n", k)
		}
	}
}

// doctorStart reports the keychain, the prompt backend and each harness
// with where its model API key would come from.
func doctorStart() (DoctorFacility, DoctorFacility, []DoctorHarness) {
	var kc DoctorFacility
	var store secrets.Store
	if o, err := keychain.Open(keychain.Config{}); err != nil {
		kc = DoctorFacility{Backend: "unavailable", Detail: err.Error()}
	} else {
		kc = DoctorFacility{Backend: o.Name()}
		store = o
	}
	var pr DoctorFacility
	if tool, err := (&prompt.Dialog{}).Tool(); err == nil {
		pr = DoctorFacility{Backend: "dialog", Detail: tool}
	} else if tty, terr := prompt.OpenTTY(); terr == nil {
		_ = tty.Close()
		pr = DoctorFacility{Backend: "terminal", Detail: "no dialog: " + err.Error()}
	} else {
		pr = DoctorFacility{Backend: "none", Detail: "unknown hosts are denied: " + err.Error() + "; no terminal: " + terr.Error()}
	}
	var hs []DoctorHarness
	for _, d := range all.Harnesses() {
		h := DoctorHarness{Name: d.Name}
		f, err := launch.FindHarness(d)
		if err != nil {
			h.Problem = err.Error()
			hs = append(hs, h)
			continue
		}
		h.Found, h.Path, h.Version = true, strings.Join(f.Argv, " "), f.Version
		for _, k := range d.Keys {
			src := "not set"
			if store != nil {
				if _, err := store.Get(secrets.ServiceForSkill(launch.CredentialScope), k.Secret); err == nil {
					src = "secret store (" + launch.CredentialScope + "/" + k.Secret + ")"
				}
			}
			if src == "not set" && os.Getenv(k.Env) != "" {
				src = "environment"
			}
			h.Keys = append(h.Keys, k.Env+": "+src)
		}
		hs = append(hs, h)
	}
	return kc, pr, hs
}
