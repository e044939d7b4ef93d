// Package mitm is warden's TLS interception authority.
//
// The CA key is generated once per install and kept through a [KeyStore]
// (the keychain in production; [FileKeyStore] writes a 0600 file). The CA
// certificate itself is minted per session from that key: it is short-lived
// (7 days by default), has MaxPathLen 0 so it cannot sign other CAs, and,
// when the session knows which hosts it intercepts, carries critical X.509
// name constraints permitting exactly those DNS names (and no IP addresses
// unless an IP literal is intercepted). A leaked session bundle therefore
// cannot be used to impersonate any other site, and a new session never
// inherits an old session's constraints. Leaf certificates are ECDSA P-256,
// valid for 24 hours, and cached per host.
package mitm
