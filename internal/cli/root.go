// Package cli is warden's command tree: one file per noun.
package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/policy"
)

// Factory carries what commands need from the outside world.
type Factory struct {
	IO     *cliutil.IOStreams
	Logger *slog.Logger
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "warden <command>",
		Short: "Run commands and coding agents in a least-privilege sandbox",
		Long: `warden runs any command, or an AI coding agent, in a sandbox that the OS
enforces: what it may read, write, reach on the network and see in its
environment comes from one policy file.`,
		Example:       "  warden run -- make test\n  warden run --allow-read ~/.cargo -- cargo build\n  warden policy show",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.CompletionOptions.HiddenDefaultCmd = true
	root.AddCommand(NewCmdVersion(f, nil), NewCmdRun(f, nil), NewCmdStart(f, nil), NewCmdPolicy(f), NewCmdDoctor(f, nil), NewCmdNet(f), NewCmdSecret(f), NewCmdSkill(f))
	root.AddCommand(newCmdAliases(f)...)
	return root
}

// Main runs the CLI and returns the process exit code. It prints errors
// once, adding usage only for flag errors.
func Main(ctx context.Context, f *Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &cliutil.FlagError{Err: err}
	})
	err := root.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		err = &cliutil.FlagError{Err: err} // cobra has no typed error for this
	}
	if err == nil {
		return cliutil.ExitOK
	}
	if e, ok := errors.AsType[*cliutil.ExitError](err); ok && e.Err == nil {
		return e.Code
	}
	fmt.Fprintf(f.IO.ErrOut, "warden: %s\n", renderError(err))
	if _, ok := errors.AsType[*cliutil.FlagError](err); ok {
		fmt.Fprintln(f.IO.ErrOut, "Run 'warden --help' for usage.")
	}
	if e, ok := errors.AsType[*cliutil.CodeError](err); ok && e.Hint != "" {
		fmt.Fprintf(f.IO.ErrOut, "hint: %s\n", e.Hint)
	}
	return cliutil.Code(err)
}

func renderError(err error) string {
	if pe, ok := errors.AsType[policy.ParseErrors](err); ok && len(pe) > 1 {
		return "invalid policy:\n  " + joinIndented(pe)
	}
	return err.Error()
}

func joinIndented(pe policy.ParseErrors) string {
	var s strings.Builder
	for i, e := range pe {
		if i > 0 {
			s.WriteString("\n  ")
		}
		s.WriteString(e.Error())
	}
	return s.String()
}
