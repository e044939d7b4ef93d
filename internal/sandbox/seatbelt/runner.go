package seatbelt

import (
	"io"
	"log/slog"
)

// SandboxExec is the system's sandbox-exec. Only this absolute path is
// used: a sandbox-exec found on $PATH could be anything.
const SandboxExec = "/usr/bin/sandbox-exec"

// Runner launches specs under Seatbelt. Run is implemented on darwin only;
// elsewhere it fails with a *StartError.
type Runner struct {
	// ProxyPort is the egress proxy's loopback port (network: filtered).
	ProxyPort int
	// FacadeSocket is the facade's Unix socket, exactly as the sandbox's
	// environment names it; empty means none.
	FacadeSocket string
	Logger       *slog.Logger
	Stdin        io.Reader
	Stdout       io.Writer
	Stderr       io.Writer
}
