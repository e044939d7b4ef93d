// Package facade is the single HTTP entry point through which a sandboxed
// agent reaches its skills' host-side REST sidecars.
//
// One [Facade] (an [http.Handler]) is served on several listeners:
//
//   - [Facade.ServeUnix]: the host-side Unix socket (0600 inside a 0700
//     per-session runtime dir, see [ListenUnix]). Connections on it are
//     trusted when the peer is our own uid, so no token is needed.
//   - [Facade.ServeToken]: every other listener. Each request must carry
//     "Authorization: Bearer <token>". Inside the sandbox a loopback TCP port
//     is relayed to a Unix socket; that relay MUST target a separate socket
//     served with ServeToken (never the trusted one), because once TCP bytes
//     are relayed onto a Unix socket the facade can no longer tell a local
//     client from any process that can reach the TCP port.
//
// Every request is checked in this order: Origin or Referer present (403),
// Host not pinned (403), token (401). Then "/" returns the status JSON,
// "/<mount>" and "/<mount>/" (GET/HEAD) serve the skill's SKILL.md, and
// "/<mount>/<rest>" is reverse proxied to the sidecar with the prefix
// stripped and X-Forwarded-Prefix set. Stub routes answer with a reason in
// X-Warden-Reason (and X-Omac-Reason for compatibility).
package facade
