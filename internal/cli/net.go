package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/egress/prompt"
	"github.com/wardenhq/warden/internal/launch"
	"github.com/wardenhq/warden/internal/policy"
)

// NewCmdNet builds `warden net`.
func NewCmdNet(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "net <command>",
		Short:   "Explain and audit the filtered network",
		Example: "  warden net why api.github.com\n  warden net log -n 20\n  warden net learned",
	}
	cmd.AddCommand(NewCmdNetWhy(f, nil), NewCmdNetLog(f, nil), NewCmdNetLearned(f, nil), NewCmdNetForget(f, nil))
	return cmd
}

// NetWhyOptions are `warden net why`'s inputs.
type NetWhyOptions struct {
	IO         *cliutil.IOStreams
	Target     string
	Method     string
	Path       string
	PolicyFile string
	Profile    string
	JSON       bool
}

// NewCmdNetWhy builds `warden net why`.
func NewCmdNetWhy(f *Factory, runF func(*NetWhyOptions) error) *cobra.Command {
	opts := &NetWhyOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "why HOST[:PORT]",
		Short: "Say whether the policy lets a request out, and which rule decides",
		Long: `Evaluate the network policy (as warden run would load it) for one request,
without sending anything: the verdict, the rule that made it, and how to
change it. Resolution and private-address checks happen only at run time.`,
		Example: "  warden net why api.github.com\n  warden net why api.github.com:443 --method POST --path /repos/x/y/issues",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Target = args[0]
			if runF != nil {
				return runF(opts)
			}
			return netWhyRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Method, "method", "GET", "HTTP method")
	cmd.Flags().StringVar(&opts.Path, "path", "/", "request path")
	cmd.Flags().StringVar(&opts.PolicyFile, "policy", "", "policy `FILE` layered over the defaults and the user policy")
	cmd.Flags().StringVar(&opts.Profile, "profile", "", "named profile to apply")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func netWhyRun(o *NetWhyOptions) error {
	spec, err := config.Load(config.Options{PolicyFile: o.PolicyFile, Profile: o.Profile, Project: cwd(), Notice: notice(o.IO)})
	if err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	host, port, err := egress.ParseAuthority(o.Target, 443)
	if err != nil {
		return cliutil.FlagErrorf("%s: %v", o.Target, err)
	}
	n := spec.Network
	m, err := egress.CompileMatcher(n.Allow, n.Deny, n.Rules)
	if err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, fmt.Errorf("network: %w", err))
	}
	v := m.Decide(strings.ToUpper(o.Method), host, port, o.Path)
	out := map[string]any{"host": host, "port": port, "method": o.Method, "path": o.Path, "network_mode": n.Mode, "allowed": v.Allowed, "rule": v.Rule, "reason": v.Reason, "intercepted": v.Inspect}
	if n.Mode != policy.NetFiltered {
		out["allowed"] = n.Mode == policy.NetOpen
		out["reason"] = "network.mode is " + string(n.Mode)
	}
	if o.JSON {
		return cliutil.PrintJSON(o.IO.Out, out)
	}
	verdict := "DENIED"
	if out["allowed"] == true {
		verdict = "ALLOWED"
	}
	fmt.Fprintf(o.IO.Out, "%s %s %s:%d%s — %s", verdict, strings.ToUpper(o.Method), host, port, o.Path, out["reason"])
	if v.Rule != "" && n.Mode == policy.NetFiltered {
		fmt.Fprintf(o.IO.Out, " (rule %q)", v.Rule)
	}
	fmt.Fprintln(o.IO.Out)
	switch {
	case n.Mode != policy.NetFiltered:
		fmt.Fprintln(o.IO.Out, "filtering applies with network.mode: filtered (or --net filtered)")
	case !v.Allowed:
		fmt.Fprintf(o.IO.Out, "to allow it, add %q to network.allow (or a \"%s %s:%d%s\" entry to network.rules) in your policy\n", fmt.Sprintf("%s:%d", host, port), strings.ToUpper(o.Method), host, port, o.Path)
	}
	return nil
}

// NetLogOptions are `warden net log`'s inputs.
type NetLogOptions struct {
	IO   *cliutil.IOStreams
	N    int
	JSON bool
}

// NewCmdNetLog builds `warden net log`.
func NewCmdNetLog(f *Factory, runF func(*NetLogOptions) error) *cobra.Command {
	opts := &NetLogOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:     "log",
		Short:   "Print the egress audit log: every decision with the rule that made it",
		Example: "  warden net log -n 50\n  warden net log --json | jq 'select(.decision == \"deny\")'",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return netLogRun(opts)
		},
	}
	cmd.Flags().IntVarP(&opts.N, "lines", "n", 20, "print the last `N` decisions (0: all)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the JSON lines as stored")
	return cmd
}

func netLogRun(o *NetLogOptions) error {
	p, err := launch.AuditPath()
	if err != nil {
		return err
	}
	f, err := os.Open(p) //nolint:gosec // G304: our own state file
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(o.IO.ErrOut, "no decisions recorded yet ("+p+")")
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if o.N > 0 && len(lines) > o.N {
			lines = lines[1:]
		}
	}
	for _, l := range lines {
		if o.JSON {
			fmt.Fprintln(o.IO.Out, l)
			continue
		}
		var e struct {
			Time, Kind, Host, Method, Path, Decision, Rule, Reason string
			Port                                                   int
		}
		if json.Unmarshal([]byte(l), &e) != nil {
			continue
		}
		rule := e.Rule
		if rule == "" {
			rule = "-"
		}
		fmt.Fprintf(o.IO.Out, "%s %-5s %-7s %s:%d %s %s rule=%s reason=%s\n", e.Time, e.Decision, e.Kind, e.Host, e.Port, e.Method, e.Path, rule, e.Reason)
	}
	return sc.Err()
}

// NetLearnedOptions are `warden net learned`'s inputs.
type NetLearnedOptions struct {
	IO   *cliutil.IOStreams
	JSON bool
}

// NewCmdNetLearned builds `warden net learned`.
func NewCmdNetLearned(f *Factory, runF func(*NetLearnedOptions) error) *cobra.Command {
	opts := &NetLearnedOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "learned",
		Short: "List the network decisions remembered from prompts",
		Long: `List the answers to network prompts (network.on_unknown: ask) that warden
remembers: "always" (allow) and "never" (deny), each with the project
directory it applies to (or global) and when it was given. They are kept
in learned-network.yaml beside the user policy file and only decide hosts
that no network.allow, deny or rules entry decides.`,
		Example: "  warden net learned\n  warden net learned --json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return netLearnedRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func openLearned() (*prompt.Learned, error) {
	p, err := prompt.DefaultPath()
	if err != nil {
		return nil, err
	}
	l, err := prompt.OpenLearned(p)
	if err != nil {
		return nil, cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	return l, nil
}

func netLearnedRun(o *NetLearnedOptions) error {
	l, err := openLearned()
	if err != nil {
		return err
	}
	es, err := l.Entries()
	if err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	if o.JSON {
		if es == nil {
			es = []prompt.Entry{}
		}
		return cliutil.PrintJSON(o.IO.Out, es)
	}
	if len(es) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "no learned decisions ("+l.Path()+")")
		return nil
	}
	for _, e := range es {
		fmt.Fprintf(o.IO.Out, "%-5s %s scope=%s time=%s\n", e.Decision, e.Target(), e.Scope, e.Time.Format(time.RFC3339))
	}
	return nil
}

// NetForgetOptions are `warden net forget`'s inputs.
type NetForgetOptions struct {
	IO     *cliutil.IOStreams
	Target string
	JSON   bool
}

// NewCmdNetForget builds `warden net forget`.
func NewCmdNetForget(f *Factory, runF func(*NetForgetOptions) error) *cobra.Command {
	opts := &NetForgetOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "forget HOST[:PORT]",
		Short: "Forget remembered network decisions for a host",
		Long: `Remove the remembered answers for HOST (on every port) or for HOST:PORT
only, in every project, so the next request asks again. A site answer is
named *.SITE; forgetting a host also forgets the site answers covering it.`,
		Example: "  warden net forget api.example.com\n  warden net forget api.example.com:8443\n  warden net forget '*.example.com'",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Target = args[0]
			if runF != nil {
				return runF(opts)
			}
			return netForgetRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the removed decisions as JSON")
	return cmd
}

// parseForgetTarget accepts HOST, [V6], V6, HOST:PORT and [V6]:PORT; port
// 0 means every port.
func parseForgetTarget(s string) (string, int, error) {
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		h, port, err := parseForgetTarget(rest)
		return "*." + h, port, err
	}
	if h, port, err := egress.ParseAuthority(s, 0); err == nil {
		return h, port, nil
	}
	h, err := egress.NormalizeHost(s)
	if err != nil {
		return "", 0, err
	}
	return h, 0, nil
}

func netForgetRun(o *NetForgetOptions) error {
	host, port, err := parseForgetTarget(o.Target)
	if err != nil {
		return cliutil.FlagErrorf("%s: %v", o.Target, err)
	}
	l, err := openLearned()
	if err != nil {
		return err
	}
	removed, err := l.Forget(host, port)
	if err != nil {
		return cliutil.WithCode(cliutil.ExitIO, err)
	}
	if o.JSON {
		if removed == nil {
			removed = []prompt.Entry{}
		}
		return cliutil.PrintJSON(o.IO.Out, removed)
	}
	if len(removed) == 0 {
		return fmt.Errorf("no learned decision for %s (see warden net learned)", o.Target)
	}
	for _, e := range removed {
		fmt.Fprintf(o.IO.Out, "forgot %s %s scope=%s\n", e.Decision, e.Target(), e.Scope)
	}
	return nil
}
