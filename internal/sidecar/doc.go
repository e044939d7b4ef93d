// Package sidecar supervises skill sidecar processes: parallel start, health
// polling, restart with backoff and a circuit breaker, per-sidecar rotated
// logs and process-group teardown.
//
// # Port handover
//
// Two modes, chosen per Spec:
//
//   - Spec.ListenFD (race-free, preferred): the supervisor binds
//     127.0.0.1:0 itself and keeps that listener for the sidecar's whole
//     life. Each launch receives it as fd 3 with systemd socket-activation
//     variables LISTEN_FDS=1, LISTEN_FDNAMES=http and LISTEN_PID. exec.Cmd
//     cannot know the child's pid before fork, so the command is run
//     through a two-line /bin/sh shim that sets LISTEN_PID=$$ and then
//     execs the real program, which keeps the pid: LISTEN_PID is exact, so
//     sd_listen_fds, go-systemd's activation.Listeners and similar libraries
//     accept it. The port never changes across restarts, no other process
//     can take it, and connections made while a sidecar restarts wait in
//     the kernel backlog instead of being refused. The shim runs inside
//     Spec.Wrap, so in a pid namespace $$ is the pid the sidecar sees; a
//     Wrap must pass fd 3 through.
//   - default (for sidecars that bind 127.0.0.1:$SIDECAR_PORT themselves,
//     the omac contract): a listening socket held by the supervisor would
//     make the child's bind fail with EADDRINUSE (SO_REUSEPORT on both sides
//     would "work" but the kernel would then split connections between the
//     two sockets), so the supervisor reserves a port by binding and closes
//     it immediately before exec. The window is the child's start-up time;
//     if the port is taken in it, the child fails to bind and exits before
//     becoming healthy, and the supervisor retries at once on a fresh port
//     (twice) before counting a crash. Restarts try the previous port
//     first. Addr reports the current port; OnState reports StateHealthy
//     after every (re)start, which is when a caller should re-read it.
//
// SIDECAR_PORT and SIDECAR_SKILL are set in both modes.
//
// # Secrets
//
// Secrets travel only in Spec.Env, which is the child's complete
// environment (nothing is inherited). Only variable names are logged.
package sidecar
