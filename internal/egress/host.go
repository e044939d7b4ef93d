package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host length limits (RFC 1035).
const (
	maxHostLen  = 253
	maxLabelLen = 63
	// maxRawHostLen bounds the input before IDNA mapping, which can shrink
	// (or grow) the text.
	maxRawHostLen = 1024
)

// ErrInvalidHost is wrapped by every host and authority parse error.
var ErrInvalidHost = errors.New("egress: invalid host")

func hostErr(s, why string) error {
	return fmt.Errorf("%w %q: %s", ErrInvalidHost, s, why)
}

// NormalizeHost returns the canonical form of a host name or IP literal, or
// an error wrapping [ErrInvalidHost].
//
// Names are mapped with the IDNA Lookup profile (so they are lower-cased and
// Unicode becomes punycode), then every label must be LDH (letters, digits,
// hyphen; 1..63 bytes) and the whole name at most 253 bytes. Exactly one
// trailing dot is stripped, so "a.com." and "a.com" are the same host; "a.com.."
// is rejected (empty label). Bytes that other parsers treat specially (NUL,
// CR, LF, space, tab, other controls, '\\', '%', '@', '/', '?', '#') are
// rejected before any mapping.
//
// IP literals, including "[v6]" with brackets and every legacy IPv4 form that
// inet_aton accepts ("2130706433", "0x7f.1", "0177.0.0.1", "127.1"), are
// returned in canonical netip form ("127.0.0.1", "::1"; IPv4-mapped IPv6 is
// unmapped). A name whose last label is numeric (decimal, or 0x hex) is
// always treated as an IPv4 literal and rejected if it does not parse as
// one, so it can never reach DNS as a name. Zoned IPv6 is rejected.
func NormalizeHost(s string) (string, error) {
	name, addr, err := parseHost(s)
	if err != nil {
		return "", err
	}
	if addr.IsValid() {
		return addr.String(), nil
	}
	return name, nil
}

// parseHost returns either a canonical name or a valid address.
func parseHost(s string) (string, netip.Addr, error) {
	if s == "" {
		return "", netip.Addr{}, hostErr(s, "empty")
	}
	if len(s) > maxRawHostLen {
		return "", netip.Addr{}, hostErr(s[:32]+"...", "too long")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == ' ' {
			return "", netip.Addr{}, hostErr(s, "control or space byte")
		}
		switch c {
		case '\\', '%', '@', '/', '?', '#':
			return "", netip.Addr{}, hostErr(s, fmt.Sprintf("forbidden byte %q", c))
		}
	}
	if s[0] == '[' {
		if s[len(s)-1] != ']' {
			return "", netip.Addr{}, hostErr(s, "unterminated bracket")
		}
		a, err := netip.ParseAddr(s[1 : len(s)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", netip.Addr{}, hostErr(s, "bad IPv6 literal")
		}
		return "", a.Unmap(), nil
	}
	if strings.ContainsAny(s, "[]") {
		return "", netip.Addr{}, hostErr(s, "stray bracket")
	}
	if strings.IndexByte(s, ':') >= 0 {
		// Only an unbracketed IPv6 literal may contain a colon.
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", netip.Addr{}, hostErr(s, "colon in host name")
		}
		return "", a.Unmap(), nil
	}
	name, ok := fastASCII(s)
	if !ok {
		if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
			return "", netip.Addr{}, hostErr(s, "invalid UTF-8")
		}
		var err error
		name, err = idna.Lookup.ToASCII(s)
		if err != nil {
			return "", netip.Addr{}, hostErr(s, "not a valid IDNA name")
		}
		// The result must be a fixed point, or two spellings of one name
		// could be decided differently.
		if again, err := idna.Lookup.ToASCII(name); err != nil || again != name {
			return "", netip.Addr{}, hostErr(s, "IDNA mapping is not stable")
		}
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", netip.Addr{}, hostErr(s, "empty")
	}
	if len(name) > maxHostLen {
		return "", netip.Addr{}, hostErr(s, "name longer than 253 bytes")
	}
	last := name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		last = name[i+1:]
	}
	if isNumericLabel(last) {
		a, ok := parseInetAton(name)
		if !ok {
			return "", netip.Addr{}, hostErr(s, "numeric name that is not an IPv4 address")
		}
		return "", a, nil
	}
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != "" {
			return "", netip.Addr{}, hostErr(s, err)
		}
	}
	return name, netip.Addr{}, nil
}

// fastASCII reports whether s is already lower-case LDH ASCII without
// punycode labels, in which case IDNA mapping is the identity.
func fastASCII(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return "", false
		}
	}
	// Punycode labels need validation and "--" in positions 3-4 is
	// reserved: let the IDNA profile judge both.
	if strings.Contains(s, "--") {
		return "", false
	}
	return s, true
}

func checkLabel(l string) string {
	if l == "" {
		return "empty label"
	}
	if len(l) > maxLabelLen {
		return "label longer than 63 bytes"
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return "label starts or ends with a hyphen"
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return "non-LDH label"
		}
	}
	return ""
}

// isNumericLabel is the WHATWG URL "ends in a number" test: a label that is
// all decimal digits or "0x" followed by hex digits.
func isNumericLabel(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseInetAton parses s the way glibc inet_aton does: one to four parts,
// each decimal, octal (leading 0) or hex (0x); the last part fills the
// remaining bytes.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var ip uint64
	n := len(vals)
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		ip |= vals[i] << (8 * (3 - i))
	}
	lastMax := uint64(1)<<(8*(5-n)) - 1
	if vals[n-1] > lastMax {
		return netip.Addr{}, false
	}
	ip |= vals[n-1]
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true //nolint:gosec // G115: ip <= 0xffffffff, checked above; bytes are taken on purpose
}

func parseAtonPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // inet_aton accepts "0x" as 0
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if len(p) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(p, base, 64)
	if err != nil || v > 0xffffffff {
		return 0, false
	}
	return v, true
}

// ParseAuthority splits a CONNECT target or Host header value into a
// normalised host and a port. "[v6]:port", "host:port" and, when
// defaultPort > 0, a bare "host" or "[v6]" are accepted. The port must be
// 1..65535 in plain decimal without sign or leading zeros.
func ParseAuthority(s string, defaultPort int) (host string, port int, err error) {
	if s == "" {
		return "", 0, hostErr(s, "empty authority")
	}
	hostPart, portPart, hasPort := s, "", false
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, hostErr(s, "unterminated bracket")
		}
		hostPart = s[:end+1]
		rest := s[end+1:]
		if rest != "" {
			if rest[0] != ':' {
				return "", 0, hostErr(s, "junk after bracket")
			}
			portPart, hasPort = rest[1:], true
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		hostPart, portPart, hasPort = s[:i], s[i+1:], true
		if strings.IndexByte(hostPart, ':') >= 0 {
			return "", 0, hostErr(s, "unbracketed IPv6 or extra colon")
		}
	}
	if hasPort {
		port, err = parsePort(portPart)
		if err != nil {
			return "", 0, hostErr(s, err.Error())
		}
	} else {
		if defaultPort <= 0 {
			return "", 0, hostErr(s, "missing port")
		}
		port = defaultPort
	}
	host, err = NormalizeHost(hostPart)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, errors.New("bad port")
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("bad port")
		}
		n = n*10 + int(s[i]-'0')
	}
	if n < 1 || n > 65535 {
		return 0, errors.New("port out of range")
	}
	return n, nil
}

// hostPort joins a normalised host and port for dialling and display.
func hostPort(host string, port int) string {
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
