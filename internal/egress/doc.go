// Package egress is warden's egress proxy: the only way out of a sandbox's
// empty network namespace.
//
// One listener serves both SOCKS5 (detected by a leading 0x05 byte) and
// HTTP: absolute-URI forward proxying for http:// (keep-alive, every request
// decided separately) and CONNECT tunnels. Every client presents the
// per-session token (Proxy-Authorization Basic with the token as password,
// or SOCKS5 username/password auth); without it HTTP gets 407 and SOCKS an
// auth failure.
//
// # Decisions
//
// A request is decided in this order, and nothing is resolved before the
// name is allowed (so a denied name never leaks to DNS):
//
//  1. The host is normalised by [NormalizeHost] (IDNA, lower case, one
//     trailing dot stripped, LDH only, legacy IPv4 forms canonicalised).
//  2. Cloud metadata names (metadata.google.internal, ...) are refused.
//  3. Deny patterns win. A deny pattern without a port denies every port.
//  4. If any Rules entry names the host:port, rules govern it: requests
//     need a rule matching method and path, and tunnels are intercepted.
//  5. Allow patterns; without a port they allow 80 and 443.
//  6. Otherwise Config.Ask, if set (answers are kept for the session;
//     package prompt implements it for network.on_unknown: ask).
//  7. The name is resolved (Config.Hosts, then the Resolver), every
//     address is checked by [AddrReason] (and against deny CIDRs), and one
//     of the checked addresses is dialled. The proxy never resolves again
//     for that connection, and each new upstream connection is checked
//     anew, so rebinding cannot reach a private address.
//
// "*.example.com" matches strict subdomains only, never example.com itself
// nor evilexample.com; wildcards over a public suffix are refused, as is a
// bare "*".
//
// Denials answer 403 with X-Warden-Deny set to a Reason* kind,
// X-Warden-Rule set to the deciding pattern where there is one, and a short
// text body saying what was blocked and how to allow it. Every decision is
// written as one JSON line to Config.Audit.
//
// # Interception
//
// Hosts that have rules or injected credentials are intercepted with the
// session CA from package mitm (use [InterceptHosts] for its name
// constraints): TLS is terminated with a leaf for the tunnel host (ALPN h2
// and http/1.1; a foreign SNI or Host header is refused, so no domain
// fronting), each request is decided by method and path, credentials are
// set, and the request is forwarded over TLS verified against
// Config.RootCAs. Only WebSocket upgrades are spliced, after the upgrade
// request itself passed the rules; h2c and other upgrades are refused.
// Paths containing dot segments or encoded slashes, dots or backslashes
// are refused rather than normalised.
package egress
