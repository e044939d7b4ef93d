// Package prompt answers the egress proxy's "unknown host" question
// (egress.Config.Ask) for network.on_unknown: ask.
//
// A [Prompter] first consults the [Learned] store, the decisions the user
// asked warden to remember ($XDG_CONFIG_HOME/warden/learned-network.yaml),
// and otherwise asks through an [Asker]: a native dialog ([Dialog]: zenity
// or kdialog on Linux, osascript on macOS) or the warden process's own
// terminal ([Terminal], /dev/tty, outside the sandbox, whose processes run
// in another session and cannot inject input with TIOCSTI). [Choose]
// picks one. Every failure denies: no asker, an error, a timeout, a
// cancelled context or a host name that is not in canonical form.
//
// The answers are "once" (allow for this session), "always" (allow and
// remember), "deny" (deny for this session) and "never" (deny and
// remember). The proxy keeps every answer for its lifetime; only always and
// never reach the store, scoped to the session's project directory.
//
// The proxy consults Ask only for hosts that no deny, rules or allow entry
// decides, and it checks the resolved addresses (private, loopback,
// metadata, deny CIDRs) after an allowed answer just as after an allow
// entry, so a learned allow can never override an explicit deny or the
// address checks.
package prompt
