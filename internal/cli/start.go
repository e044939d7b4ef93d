package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/harness"
	"github.com/wardenhq/warden/internal/harness/all"
	"github.com/wardenhq/warden/internal/launch"
	"github.com/wardenhq/warden/internal/policy"
)

// StartOptions are `warden start`'s inputs.
type StartOptions struct {
	RunOptions
	Harness   string
	PrintPlan bool
	APIBase   string
	Args      []string
}

// NewCmdStart builds `warden start`.
func NewCmdStart(f *Factory, runF func(*StartOptions) error) *cobra.Command {
	opts := &StartOptions{RunOptions: RunOptions{IO: f.IO}}
	cmd := &cobra.Command{
		Use:   "start [HARNESS] [flags] [-- HARNESS-ARGS...]",
		Short: "Start an agent harness (opencode, claude, codex, gemini) in the sandbox",
		Long: `Start an agent harness in the sandbox, with its model API reached
through warden's egress proxy (keys injected there, never visible inside),
its state kept in a warden-managed home, skills placed where it finds them,
and a bridge through which warden's policy (tools.deny) vetoes tool calls.

Harnesses: ` + harness.Names(all.Harnesses()) + `. Without a name, ` + all.Default + `.
Arguments after -- go to the harness.`,
		Example: `  warden start claude
  warden start codex --print-plan
  warden start gemini -- -p "fix the failing test" --yolo
  warden secret set net anthropic-api-key   # then warden start claude`,
		RunE: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			switch {
			case dash == 0:
				opts.Args = args
			case dash > 1 || (dash < 0 && len(args) > 1):
				return cliutil.FlagErrorf("start takes one harness name; harness arguments go after --")
			case len(args) > 0:
				opts.Harness, opts.Args = args[0], args[1:]
			}
			if runF != nil {
				return runF(opts)
			}
			return runStart(c, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.PrintPlan, "print-plan", false, "print everything start would do (grants, env, hosts, keys, bridge files) and run nothing")
	fl.StringVar(&opts.APIBase, "api-base", "", "point the harness's model API at `URL` (a gateway or local model server; its host is the one allowed)")
	opts.addPolicyFlags(fl)
	fl.StringArrayVar(&opts.Skills, "skill", nil, "place the registered skill `NAME` (repeatable; all for every one)")
	return cmd
}

func runStart(c *cobra.Command, o *StartOptions) error {
	name := o.Harness
	if name == "" {
		name = all.Default
	}
	d, ok := harness.Lookup(all.Harnesses(), name)
	if !ok {
		return cliutil.FlagErrorf("unknown harness %q; supported: %s", name, harness.Names(all.Harnesses()))
	}
	flags, err := o.flagLayer()
	if err != nil {
		return err
	}
	plan, err := launch.NewStartPlan(launch.StartOptions{
		Options: launch.Options{
			Config: o.configOptions(flags),
			Skills: o.Skills,
		},
		Harness: d, Args: o.Args, APIBase: o.APIBase,
	})
	if err != nil {
		return &cliutil.CodeError{Code: cliutil.ExitSandboxFailed, Err: err}
	}
	announce(o.IO.ErrOut, plan)
	if o.PrintPlan {
		return printPlan(o.IO.Out, plan)
	}
	for _, n := range plan.Harness.Notes {
		fmt.Fprintf(o.IO.ErrOut, "warden: %s\n", n)
	}
	return runPlan(c, o.IO, plan)
}

// printPlan shows what `warden start` would do. It holds no secret: keys
// are named by where they come from, never shown.
func printPlan(w io.Writer, plan *launch.Plan) error {
	hp := plan.Harness
	d := hp.Harness
	r := plan.Resolved
	version := hp.Found.Version
	if version == "" {
		version = "version unknown"
	}
	fmt.Fprintf(w, "harness   %s (%s), %s\n", d.Title, d.Name, version)
	fmt.Fprintf(w, "binary    %s\n", strings.Join(hp.Found.Argv, " "))
	fmt.Fprintf(w, "home      %s (managed; the harness's config and state, never your real dotfiles)\n", hp.Home)
	fmt.Fprintf(w, "backend   %s\n", plan.Backend)
	fmt.Fprintf(w, "workdir   %s\n", r.Workdir)
	fmt.Fprintf(w, "own sandbox  %s\n", d.SandboxOff)

	fmt.Fprintln(w, "\ngrants")
	for _, g := range r.Read {
		fmt.Fprintf(w, "  read   %s  (%s)\n", g.Path, g.Rule)
	}
	for _, g := range r.Write {
		fmt.Fprintf(w, "  write  %s  (%s)\n", g.Path, g.Rule)
	}
	fmt.Fprintf(w, "  denied and protected paths: %d (warden run --explain lists them)\n", len(r.Deny)+len(r.Protect))

	fmt.Fprintf(w, "\nnetwork   %s\n", r.Network.Mode)
	if len(r.Network.Allow) > 0 {
		fmt.Fprintf(w, "  allow  %s\n", strings.Join(r.Network.Allow, ", "))
	}
	for _, rule := range r.Network.Rules {
		fmt.Fprintf(w, "  rule   %s\n", rule)
	}
	fmt.Fprintln(w, "\nmodel API keys (injected by the egress proxy; the sandbox only holds a placeholder)")
	for _, k := range hp.Keys {
		header := k.Header
		if header == "" {
			header = "Authorization: Bearer"
		}
		switch k.Source {
		case "":
			fmt.Fprintf(w, "  %-28s not set (store it: warden secret set net %s, or export %s)\n", k.Env, k.Secret, k.Env)
		default:
			fmt.Fprintf(w, "  %-28s from the %s → %s header to %s\n", k.Env, k.Source, header, k.Host)
		}
	}

	fmt.Fprintln(w, "\nenvironment (besides the policy's pass-through and warden's proxy variables)")
	env := map[string]string{}
	for k, v := range d.Env {
		env[k] = harness.Expand(v, hp.Home, launch.InnerHarnessDir, r.Workdir)
	}
	maps.Copy(env, hp.Bridge.Env)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(w, "  %s=%s\n", k, env[k])
	}

	if len(plan.Spec.ToolsDeny) > 0 {
		fmt.Fprintf(w, "\ntools.deny (vetoed by the bridge)  %s\n", strings.Join(plan.Spec.ToolsDeny, ", "))
	}
	fmt.Fprintln(w, "\nbridge files (read-only inside the sandbox)")
	fmt.Fprintf(w, "  %s/bridge.json\n", launch.InnerHarnessDir)
	for _, f := range hp.Bridge.Files {
		fmt.Fprintf(w, "  %s\n", f.Path)
		for line := range strings.SplitSeq(strings.TrimRight(string(f.Data), "\n"), "\n") {
			fmt.Fprintf(w, "    | %s\n", line)
		}
	}
	if len(hp.Skills) > 0 {
		fmt.Fprintln(w, "\nskills (read-only)")
		for _, b := range hp.Skills {
			fmt.Fprintf(w, "  %s\n", b.Dst)
		}
	}
	fmt.Fprintf(w, "\ncommand   %s\n", strings.Join(quoteAll(plan.Sandbox.Argv), " "))
	if plan.Resolved.Mode == policy.ModeRWX {
		fmt.Fprintln(w, "\n*** MODE RWX: THE WHOLE FILESYSTEM IS WRITABLE ***")
	}
	return nil
}
