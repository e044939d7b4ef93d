package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/buildinfo"
	"github.com/wardenhq/warden/internal/cli/cliutil"
)

// VersionOptions are `warden version`'s inputs.
type VersionOptions struct {
	IO   *cliutil.IOStreams
	JSON bool
}

// NewCmdVersion builds `warden version`.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print warden's version",
		Example: "  warden version\n  warden version --json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func versionRun(o *VersionOptions) error {
	if o.JSON {
		return cliutil.PrintJSON(o.IO.Out, map[string]string{"version": buildinfo.String(), "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
	}
	fmt.Fprintf(o.IO.Out, "warden %s (%s, %s/%s)\n", buildinfo.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
