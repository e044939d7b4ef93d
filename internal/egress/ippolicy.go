package egress

import (
	"net/netip"
	"slices"
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// metadataAddrs are cloud instance-metadata endpoints: refused even with
// AllowPrivate.
var metadataAddrs = mustPrefixes(
	"169.254.169.254/32", // AWS, GCP, Azure, OCI, DigitalOcean, ...
	"169.254.169.253/32", // AWS DNS
	"169.254.169.123/32", // AWS time
	"169.254.170.2/32",   // AWS ECS task metadata
	"169.254.170.23/32",  // AWS EKS pod identity
	"100.100.100.200/32", // Alibaba
	"168.63.129.16/32",   // Azure wireserver
	"192.0.0.192/32",     // Oracle legacy
	"fd00:ec2::254/128",  // AWS IPv6
	"fd00:ec2::23/128",   // AWS IPv6 EKS pod identity
)

// neverAddrs are not destinations at all: refused even with AllowPrivate.
// 0.0.0.0/8 and :: reach the host's own loopback on Linux.
var neverAddrs = mustPrefixes(
	"0.0.0.0/8",
	"255.255.255.255/32",
	"224.0.0.0/4",
	"::/128",
	"ff00::/8",
)

// privateAddrs are refused unless AllowPrivate.
var privateAddrs = mustPrefixes(
	"127.0.0.0/8",
	"10.0.0.0/8",
	"172.16.0.0/12",
	"192.168.0.0/16",
	"100.64.0.0/10",   // CGNAT
	"169.254.0.0/16",  // link-local
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"240.0.0.0/4",     // reserved
	"::1/128",
	"::/96",          // IPv4-compatible (deprecated)
	"100::/64",       // discard
	"2001::/32",      // Teredo: the embedded address is obfuscated
	"2001:db8::/32",  // documentation
	"fc00::/7",       // ULA
	"fe80::/10",      // link-local
	"fec0::/10",      // site-local (deprecated)
	"64:ff9b:1::/48", // local-use NAT64
)

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	siit   = netip.MustParsePrefix("::ffff:0:0:0/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

func inAny(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// embeddedV4 returns the IPv4 address that an IPv6 translation or tunnel
// address (IPv4-mapped, NAT64, SIIT, 6to4) carries.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	if a.Is4In6() {
		return a.Unmap(), true
	}
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), siit.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// AddrReason classifies a destination address: "" if it may be dialled,
// ReasonMetadata for metadata endpoints (refused whatever allowPrivate
// says), or ReasonPrivateDestination for loopback, private, link-local,
// reserved and non-unicast addresses (non-unicast ones are refused even
// with allowPrivate). Addresses embedded in IPv6 translation and tunnel
// forms are checked too.
func AddrReason(a netip.Addr, allowPrivate bool) string {
	if !a.IsValid() || a.Zone() != "" {
		return ReasonPrivateDestination
	}
	a = a.Unmap()
	if inAny(a, metadataAddrs) {
		return ReasonMetadata
	}
	if v4, ok := embeddedV4(a); ok {
		if r := AddrReason(v4, allowPrivate); r != "" {
			return r
		}
	}
	if inAny(a, neverAddrs) {
		return ReasonPrivateDestination
	}
	if !allowPrivate && inAny(a, privateAddrs) {
		return ReasonPrivateDestination
	}
	return ""
}

// prefixIsPrivate reports whether any address in p would be refused
// without AllowPrivate.
func prefixIsPrivate(p netip.Prefix) bool {
	if p.Bits() == 0 {
		return true
	}
	for _, set := range [][]netip.Prefix{metadataAddrs, neverAddrs, privateAddrs} {
		if slices.ContainsFunc(set, p.Overlaps) {
			return true
		}
	}
	if p.Addr().Is6() && (p.Overlaps(nat64) || p.Overlaps(siit) || p.Overlaps(sixTo4)) {
		return true
	}
	return false
}
