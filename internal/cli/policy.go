package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
)

// NewCmdPolicy builds `warden policy`.
func NewCmdPolicy(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "policy <command>",
		Short:   "Show and check sandbox policies",
		Example: "  warden policy show --effective\n  warden policy check ./warden.yaml",
	}
	cmd.AddCommand(NewCmdPolicyShow(f, nil), NewCmdPolicyCheck(f, nil), NewCmdPolicyApprove(f), NewCmdPolicyRevoke(f))
	return cmd
}

// PolicyShowOptions are `warden policy show`'s inputs.
type PolicyShowOptions struct {
	IO         *cliutil.IOStreams
	PolicyFile string
	Profile    string
	Effective  bool
	Builtin    bool
	JSON       bool
}

// NewCmdPolicyShow builds `warden policy show`.
func NewCmdPolicyShow(f *Factory, runF func(*PolicyShowOptions) error) *cobra.Command {
	opts := &PolicyShowOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the merged policy with the source of each value",
		Long: `Print the policy that warden run would use: built-in defaults < user file
(~/.config/warden/policy.yaml) < --policy FILE < --profile, with the layer
that set each value. --effective resolves it against this directory and
machine: paths made absolute, protected paths found, environment computed.`,
		Example: "  warden policy show\n  warden policy show --policy team.yaml --profile strict --effective --json\n  warden policy show --builtin",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return policyShowRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.PolicyFile, "policy", "", "policy `FILE` to layer in")
	cmd.Flags().StringVar(&opts.Profile, "profile", "", "named profile to apply")
	cmd.Flags().BoolVar(&opts.Effective, "effective", false, "resolve against this workdir and machine")
	cmd.Flags().BoolVar(&opts.Builtin, "builtin", false, "print the built-in defaults and protection lists")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func policyShowRun(o *PolicyShowOptions) error {
	if o.Builtin {
		lists := map[string][]string{
			"protected_in_writable_roots": policy.ProtectedInRoots(),
			"protected_when_present":      policy.ProtectedIfPresent(),
			"protected_in_home":           policy.ProtectedInHome(),
			"unreadable_in_home":          policy.SecretsInHome(),
			"unreadable_system":           policy.SecretsSystem(),
			"allow_hidden":                policy.DefaultAllowHidden,
		}
		if o.JSON {
			return cliutil.PrintJSON(o.IO.Out, lists)
		}
		fmt.Fprint(o.IO.Out, string(policy.BuiltinYAML()))
		for _, k := range slices.Sorted(maps.Keys(lists)) {
			fmt.Fprintf(o.IO.Out, "# %s:\n#   %s\n", k, strings.Join(lists[k], " "))
		}
		return nil
	}
	spec, err := config.Load(config.Options{PolicyFile: o.PolicyFile, Profile: o.Profile, Project: cwd(), Notice: notice(o.IO)})
	if err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	if o.Effective {
		h, err := config.NewOSHost()
		if err != nil {
			return err
		}
		res, err := policy.Resolve(spec, h, policy.ResolveOptions{})
		if err != nil {
			return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
		}
		if o.JSON {
			return cliutil.PrintJSON(o.IO.Out, map[string]any{"policy": res, "sources": spec.Sources})
		}
		b, err := yaml.Marshal(res)
		if err != nil {
			return err
		}
		o.IO.Out.Write(b) //nolint:errcheck // best effort to stdout
		printSources(o.IO.Out, spec)
		return nil
	}
	if o.JSON {
		return cliutil.PrintJSON(o.IO.Out, spec)
	}
	b, err := yaml.Marshal(spec)
	if err != nil {
		return err
	}
	o.IO.Out.Write(b) //nolint:errcheck // best effort to stdout
	printSources(o.IO.Out, spec)
	return nil
}

func printSources(w io.Writer, spec *policy.Spec) {
	fmt.Fprintln(w, "# sources:")
	for _, k := range slices.Sorted(maps.Keys(spec.Sources)) {
		fmt.Fprintf(w, "#   %-36s %s\n", k, strings.Join(spec.Sources[k], " < "))
	}
}

// PolicyCheckOptions are `warden policy check`'s inputs.
type PolicyCheckOptions struct {
	IO   *cliutil.IOStreams
	File string
}

// NewCmdPolicyCheck builds `warden policy check`.
func NewCmdPolicyCheck(f *Factory, runF func(*PolicyCheckOptions) error) *cobra.Command {
	opts := &PolicyCheckOptions{IO: f.IO}
	return &cobra.Command{
		Use:     "check FILE",
		Short:   "Validate a policy file (exit 0 when valid, 3 with line-numbered errors)",
		Example: "  warden policy check ~/.config/warden/policy.yaml\n  cat p.yaml | warden policy check -",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return policyCheckRun(opts)
		},
	}
}

func policyCheckRun(o *PolicyCheckOptions) error {
	f, err := config.ReadFile(o.File)
	if err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	// Profiles must merge (extends chains resolve, no cycles).
	srcs := []policy.Source{{Name: "builtin", File: policy.Builtin()}, {Name: o.File, File: f}}
	if _, err := policy.Merge(policy.MergeInput{Sources: srcs}); err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	for name := range f.Profiles {
		if _, err := policy.Merge(policy.MergeInput{Sources: srcs, Profile: name}); err != nil {
			return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
		}
	}
	fmt.Fprintf(o.IO.Out, "%s: ok\n", o.File)
	return nil
}

// PolicyApproveOptions are `warden policy approve`'s and `revoke`'s inputs.
type PolicyApproveOptions struct {
	IO  *cliutil.IOStreams
	Yes bool
}

// NewCmdPolicyApprove builds `warden policy approve`.
func NewCmdPolicyApprove(f *Factory) *cobra.Command {
	opts := &PolicyApproveOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "approve",
		Short: "Review and approve this project's .warden/policy.yaml (pinned to its content)",
		Long: `A project may carry its own policy in .warden/policy.yaml. warden honours it
only after you approved its exact content: a repository you clone must not be
able to loosen the sandbox it is opened in. approve prints the file and, after
you confirm (or with --yes), pins its SHA-256; any later change needs a new
approval. The sandbox itself cannot write .warden/.`,
		Example: "  warden policy approve\n  warden policy approve --yes",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			pr, err := findProject()
			if err != nil {
				return err
			}
			if _, err := policy.Parse(pr.Path, pr.Data); err != nil {
				return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
			}
			fmt.Fprintf(opts.IO.ErrOut, "%s (%s, %s)\n", pr.Path, pr.Hash, pr.Status())
			for line := range strings.SplitSeq(strings.TrimRight(string(pr.Data), "\n"), "\n") {
				fmt.Fprintf(opts.IO.ErrOut, "  | %s\n", line)
			}
			if pr.Status() == "approved" {
				fmt.Fprintln(opts.IO.ErrOut, "already approved")
				return nil
			}
			if !opts.Yes {
				if !cliutil.IsTerminal(opts.IO.In) {
					return cliutil.WithCode(cliutil.ExitFailure, errors.New("not approved: confirm at a terminal or pass --yes"))
				}
				fmt.Fprint(opts.IO.ErrOut, "honour this policy for every warden run and start here? [y/N] ")
				line, _ := bufio.NewReader(opts.IO.In).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
					return cliutil.WithCode(cliutil.ExitFailure, errors.New("not approved"))
				}
			}
			if err := config.Approve(pr); err != nil {
				return err
			}
			fmt.Fprintf(opts.IO.ErrOut, "approved %s\n", pr.Hash)
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "approve without asking")
	return cmd
}

// NewCmdPolicyRevoke builds `warden policy revoke`.
func NewCmdPolicyRevoke(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "revoke",
		Short:   "Stop honouring this project's .warden/policy.yaml",
		Example: "  warden policy revoke",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			pr, err := findProject()
			if err != nil {
				return err
			}
			if err := config.Revoke(pr.Path); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "revoked %s\n", pr.Path)
			return nil
		},
	}
}

// findProject finds this directory's project policy, or fails saying there
// is none.
func findProject() (*config.Project, error) {
	pr, err := config.FindProject(cwd())
	if err != nil {
		return nil, err
	}
	if pr == nil {
		return nil, cliutil.WithCode(cliutil.ExitFailure, fmt.Errorf("no %s in this directory or its parents", config.ProjectFile))
	}
	return pr, nil
}
