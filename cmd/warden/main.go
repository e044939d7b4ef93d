// Command warden runs commands and coding agents in a least-privilege
// sandbox.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/wardenhq/warden/internal/cli"
	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/harness"
	"github.com/wardenhq/warden/internal/launch"
	"github.com/wardenhq/warden/internal/reexec"
	"github.com/wardenhq/warden/internal/sandbox/child"
)

func init() {
	reexec.Register("init", child.Init)
	reexec.Register("exec", child.Exec)
	reexec.Register("hook", harness.HookMain)
	reexec.Register("sidecar", launch.SidecarMain)
}

func main() {
	reexec.Dispatch()
	io := cliutil.System()
	logger := slog.New(slog.NewTextHandler(io.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	os.Exit(cli.Main(context.Background(), &cli.Factory{IO: io, Logger: logger}, os.Args[1:]))
}
