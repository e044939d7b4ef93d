package egress

import (
	"net/netip"
	"testing"
)

func TestAddrReason(t *testing.T) {
	t.Parallel()
	const (
		ok   = ""
		priv = ReasonPrivateDestination
		meta = ReasonMetadata
	)
	tests := []struct {
		addr                 string
		strict, allowPrivate string
	}{
		{"93.184.216.34", ok, ok},
		{"2606:2800:220:1:248:1893:25c8:1946", ok, ok},
		{"127.0.0.1", priv, ok},
		{"127.255.255.254", priv, ok},
		{"::1", priv, ok},
		{"0.0.0.0", priv, priv},
		{"0.1.2.3", priv, priv},
		{"::", priv, priv},
		{"10.1.2.3", priv, ok},
		{"172.16.0.1", priv, ok},
		{"172.32.0.1", ok, ok},
		{"192.168.1.1", priv, ok},
		{"100.64.0.1", priv, ok},
		{"169.254.1.1", priv, ok},
		{"fe80::1", priv, ok},
		{"fc00::1", priv, ok},
		{"fd12:3456::1", priv, ok},
		{"224.0.0.1", priv, priv},
		{"ff02::1", priv, priv},
		{"255.255.255.255", priv, priv},
		{"::ffff:127.0.0.1", priv, ok},
		{"::ffff:10.0.0.1", priv, ok},
		{"::ffff:169.254.169.254", meta, meta},
		{"64:ff9b::7f00:1", priv, ok},      // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", meta, meta}, // NAT64 of 169.254.169.254
		{"64:ff9b::5db8:d822", ok, ok},     // NAT64 of a public address
		{"2002:7f00:1::1", priv, ok},       // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", meta, meta},  // 6to4 of metadata
		{"::ffff:0:7f00:1", priv, ok},      // SIIT of 127.0.0.1
		{"::7f00:1", priv, ok},             // IPv4-compatible
		{"2001:0:4136:e378::1", priv, ok},  // Teredo
		{"169.254.169.254", meta, meta},
		{"169.254.170.2", meta, meta},
		{"100.100.100.200", meta, meta},
		{"fd00:ec2::254", meta, meta},
		{"168.63.129.16", meta, meta},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			if got := AddrReason(a, false); got != tt.strict {
				t.Errorf("AddrReason(%s, false) = %q, want %q", a, got, tt.strict)
			}
			if got := AddrReason(a, true); got != tt.allowPrivate {
				t.Errorf("AddrReason(%s, true) = %q, want %q", a, got, tt.allowPrivate)
			}
		})
	}
	if got := AddrReason(netip.MustParseAddr("fe80::1%eth0"), true); got != priv {
		t.Errorf("zoned address: %q", got)
	}
}

func TestPrefixIsPrivate(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"10.0.0.0/8": true, "0.0.0.0/0": true, "8.8.8.0/24": false, "172.0.0.0/8": true,
		"2001:4860::/32": false, "64:ff9b::/96": true, "::/0": true,
	} {
		if got := prefixIsPrivate(netip.MustParsePrefix(s)); got != want {
			t.Errorf("prefixIsPrivate(%s) = %v, want %v", s, got, want)
		}
	}
}
