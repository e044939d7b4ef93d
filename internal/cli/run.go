package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/launch"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox/bwrap"
)

// RunOptions are `warden run`'s inputs.
type RunOptions struct {
	IO         *cliutil.IOStreams
	PolicyFile string
	Profile    string
	Mode       string
	Backend    string
	AllowRead  []string
	AllowWrite []string
	Env        []string
	Net        string
	Explain    bool
	Skills     []string
	Argv       []string
}

// NewCmdRun builds `warden run`.
func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command in the sandbox",
		Long: `Run CMD in the sandbox with the current directory as its workdir.

The exit status is CMD's own; 125 means warden failed before CMD started,
126 and 127 that CMD could not be executed or found, 128+N that it was
killed by signal N.`,
		Example: `  warden run -- make test
  warden run --allow-read ~/.cargo --env CARGO_HOME -- cargo build
  warden run --explain -- sh`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cliutil.FlagErrorf("run needs a command: warden run [flags] -- CMD [ARGS...]")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Argv = args
			if runF != nil {
				return runF(opts)
			}
			return runRun(c, opts)
		},
	}
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	opts.addPolicyFlags(fl)
	fl.StringVar(&opts.Backend, "backend", "", "sandbox backend: auto, bwrap or landlock (none only from a policy file)")
	fl.StringVar(&opts.Net, "net", "", "network: blocked, open or filtered")
	fl.BoolVar(&opts.Explain, "explain", false, "print the resolved policy and the compiled sandbox, and run nothing")
	fl.StringArrayVar(&opts.Skills, "skill", nil, "mount the registered skill `NAME` through the facade (repeatable; all for every one)")
	return cmd
}

// addPolicyFlags adds the policy flags run and start share.
func (o *RunOptions) addPolicyFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.PolicyFile, "policy", "", "policy `FILE` layered over the defaults and the user policy")
	fl.StringVar(&o.Profile, "profile", "", "named profile to apply")
	fl.StringVar(&o.Mode, "mode", "", "filesystem mode: sandbox, rx or rwx")
	fl.StringArrayVar(&o.AllowRead, "allow-read", nil, "grant read access to `PATH` (repeatable)")
	fl.StringArrayVar(&o.AllowWrite, "allow-write", nil, "grant write access to `PATH` (repeatable)")
	fl.StringArrayVar(&o.Env, "env", nil, "pass environment variable `NAME` through (repeatable; NAME* for a prefix)")
}

// flagLayer turns flags into the highest policy layer.
func (o *RunOptions) flagLayer() (*policy.Layer, error) {
	l := &policy.Layer{ReadPaths: o.AllowRead, WritePaths: o.AllowWrite}
	if o.Mode != "" {
		m := policy.Mode(o.Mode)
		switch m {
		case policy.ModeSandbox, policy.ModeRX, policy.ModeRWX:
		default:
			return nil, cliutil.FlagErrorf("--mode: invalid value %q (want sandbox, rx or rwx)", o.Mode)
		}
		l.Mode = &m
	}
	if o.Backend != "" {
		b := policy.Backend(o.Backend)
		switch b {
		case policy.BackendNone:
			return nil, cliutil.FlagErrorf("--backend none is refused: turning the sandbox off must be written in a policy file (backend: none)")
		case policy.BackendAuto, policy.BackendBwrap, policy.BackendLandlock, policy.BackendSeatbelt:
		default:
			return nil, cliutil.FlagErrorf("--backend: invalid value %q (want auto, bwrap, landlock or none)", o.Backend)
		}
		l.Backend = &b
	}
	if o.Net != "" {
		n := policy.NetMode(o.Net)
		switch n {
		case policy.NetBlocked, policy.NetOpen, policy.NetFiltered:
		default:
			return nil, cliutil.FlagErrorf("--net: invalid value %q (want blocked, open or filtered)", o.Net)
		}
		l.Network = &policy.NetworkLayer{Mode: &n}
	}
	if len(o.Env) > 0 {
		l.Env = &policy.EnvLayer{Passthrough: o.Env}
	}
	for _, p := range append(append([]string(nil), o.AllowRead...), o.AllowWrite...) {
		if strings.TrimSpace(p) == "" {
			return nil, cliutil.FlagErrorf("empty path in --allow-read/--allow-write")
		}
	}
	return l, nil
}

func runRun(c *cobra.Command, o *RunOptions) error {
	flags, err := o.flagLayer()
	if err != nil {
		return err
	}
	plan, err := launch.NewPlan(launch.Options{
		Config: o.configOptions(flags),
		Argv:   o.Argv,
		Skills: o.Skills,
	})
	if err != nil {
		return &cliutil.CodeError{Code: cliutil.ExitSandboxFailed, Err: err}
	}
	announce(o.IO.ErrOut, plan)
	if o.Explain {
		return explain(o.IO.Out, plan)
	}
	return runPlan(c, o.IO, plan)
}

// announce prints what the user must see before a plan runs: the
// policy's warnings, a loud mode-rwx banner and the launch's notice.
func announce(w io.Writer, plan *launch.Plan) {
	for _, warn := range plan.Resolved.Warnings {
		fmt.Fprintf(w, "warden: warning: %s\n", warn)
	}
	if plan.Resolved.Mode == policy.ModeRWX {
		fmt.Fprintln(w, "warden: *** MODE RWX: THE WHOLE FILESYSTEM IS WRITABLE; THIS IS NOT A FILESYSTEM SANDBOX ***")
	}
	if plan.Notice != "" {
		fmt.Fprintf(w, "warden: %s\n", plan.Notice)
	}
}

// runPlan runs the plan on the command's streams; warden's own failure
// before the target started is 125, otherwise the target's status.
func runPlan(c *cobra.Command, io *cliutil.IOStreams, plan *launch.Plan) error {
	code, err := plan.Run(c.Context(), launch.Streams{In: io.In, Out: io.Out, Err: io.ErrOut})
	if err != nil {
		if launch.StartFailed(err) {
			return &cliutil.CodeError{Code: cliutil.ExitSandboxFailed, Err: err}
		}
		return &cliutil.CodeError{Code: code, Err: err}
	}
	return &cliutil.ExitError{Code: code}
}

func explain(w io.Writer, plan *launch.Plan) error {
	fmt.Fprintln(w, "# resolved policy")
	if err := cliutil.PrintJSON(w, plan.Resolved); err != nil {
		return err
	}
	fmt.Fprintf(w, "# backend: %s\n", plan.Backend)
	if plan.Backend == policy.BackendBwrap {
		if err := explainBwrap(w, plan); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "# command: %s\n", strings.Join(quoteAll(plan.Sandbox.Argv), " "))
	if ll := plan.Sandbox.Landlock; ll != nil {
		fmt.Fprintln(w, "# landlock (applied by the exec stage, inside the sandbox)")
		fmt.Fprint(w, prefixLines(ll.String(), "  "))
	}
	if sc := plan.Sandbox.Seccomp; sc != nil {
		fmt.Fprintf(w, "# seccomp: deny-list filter, AF_UNIX sockets allowed: %v, UDP/raw denied: %v\n", sc.AllowUnix, sc.DenyInet)
	}
	return nil
}

func explainBwrap(w io.Writer, plan *launch.Plan) error {
	sb := *plan.Sandbox
	if sb.DenyFile == "" {
		sb.DenyFile = "$RUNTIME/deny"
	}
	args, err := bwrap.Compile(&sb, bwrap.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "# bwrap argv (the environment and the command travel on a pipe, never in argv)")
	fmt.Fprint(w, "bwrap")
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			fmt.Fprint(w, " \\\n  ")
		} else {
			fmt.Fprint(w, " ")
		}
		fmt.Fprint(w, shellQuote(a))
	}
	fmt.Fprintln(w)
	return nil
}

func quoteAll(a []string) []string {
	out := make([]string, len(a))
	for i, s := range a {
		out[i] = shellQuote(s)
	}
	return out
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("-_./=:,+@%", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func prefixLines(s, p string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(p + l)
		}
	}
	return b.String()
}

// configOptions are the policy layers of run and start: the user's file,
// the project's approved policy, --policy, --profile and the flags.
func (o *RunOptions) configOptions(flags *policy.Layer) config.Options {
	return config.Options{PolicyFile: o.PolicyFile, Profile: o.Profile, Flags: flags, Project: cwd(), Notice: notice(o.IO)}
}

// cwd is the working directory, or "" when it is gone.
func cwd() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	return d
}

// notice prints a config notice on stderr.
func notice(io *cliutil.IOStreams) func(string) {
	return func(s string) { fmt.Fprintf(io.ErrOut, "warden: %s\n", s) }
}
