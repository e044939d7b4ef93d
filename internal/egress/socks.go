package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// SOCKS5 constants (RFC 1928, RFC 1929).
const (
	socksVersion     = 0x05
	socksAuthUserPW  = 0x02
	socksNoMethod    = 0xff
	socksCmdConnect  = 0x01
	socksATYPv4      = 0x01
	socksATYPDomain  = 0x03
	socksATYPv6      = 0x04
	socksRepOK       = 0x00
	socksRepFail     = 0x01
	socksRepRuleset  = 0x02
	socksRepHostUnr  = 0x04
	socksRepCmdUnsup = 0x07
	socksRepATYP     = 0x08
)

// socksError carries the reply code for a refused request.
type socksError struct {
	rep byte
	msg string
}

func (e *socksError) Error() string { return "egress: socks: " + e.msg }

// readSOCKSRequest reads a SOCKS5 request (after authentication) and
// returns the normalised destination. Only CONNECT is supported; domain
// names go through NormalizeHost, so NUL, CR, LF and the like are refused.
func readSOCKSRequest(r *bufio.Reader) (host string, port int, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", 0, err
	}
	if hdr[0] != socksVersion || hdr[2] != 0 {
		return "", 0, &socksError{socksRepFail, "bad request header"}
	}
	if hdr[1] != socksCmdConnect {
		return "", 0, &socksError{socksRepCmdUnsup, "only CONNECT is supported"}
	}
	switch hdr[3] {
	case socksATYPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", 0, err
		}
		host = netip.AddrFrom4(b).String()
	case socksATYPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", 0, err
		}
		host = netip.AddrFrom16(b).Unmap().String()
	case socksATYPDomain:
		n, err := r.ReadByte()
		if err != nil {
			return "", 0, err
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", 0, err
		}
		host, err = NormalizeHost(string(b))
		if err != nil {
			return "", 0, &socksError{socksRepRuleset, "invalid host " + strconv.Quote(string(b))}
		}
	default:
		return "", 0, &socksError{socksRepATYP, fmt.Sprintf("address type %d not supported", hdr[3])}
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return "", 0, err
	}
	port = int(pb[0])<<8 | int(pb[1])
	if port == 0 {
		return "", 0, &socksError{socksRepRuleset, "port 0"}
	}
	return host, port, nil
}

func socksReply(w io.Writer, rep byte) error {
	_, err := w.Write([]byte{socksVersion, rep, 0, socksATYPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// socksAuth runs method selection and RFC 1929 username/password
// authentication with the session token as password.
func (p *Proxy) socksAuth(c net.Conn, r *bufio.Reader) bool {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || hdr[0] != socksVersion {
		return false
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false
	}
	ok := false
	for _, m := range methods {
		ok = ok || m == socksAuthUserPW
	}
	if !ok {
		_, _ = c.Write([]byte{socksVersion, socksNoMethod})
		return false
	}
	if _, err := c.Write([]byte{socksVersion, socksAuthUserPW}); err != nil {
		return false
	}
	ver, err := r.ReadByte()
	if err != nil || ver != 0x01 {
		return false
	}
	readField := func() ([]byte, bool) {
		n, err := r.ReadByte()
		if err != nil {
			return nil, false
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err == nil
	}
	if _, ok := readField(); !ok {
		return false
	}
	pass, ok := readField()
	if !ok {
		return false
	}
	if !p.tokenOK(string(pass)) {
		_, _ = c.Write([]byte{0x01, 0x01})
		return false
	}
	_, err = c.Write([]byte{0x01, 0x00})
	return err == nil
}

func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	ctx := p.ctx
	if !p.socksAuth(c, br) {
		p.record("socks", "", 0, "", "", Verdict{Reason: ReasonAuth})
		return
	}
	host, port, err := readSOCKSRequest(br)
	if err != nil {
		if se, ok := errors.AsType[*socksError](err); ok {
			p.record("socks", "", 0, "", "", Verdict{Reason: ReasonInvalidHost})
			_ = socksReply(c, se.rep)
		}
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	v := p.decide(ctx, "socks", "", host, port, "")
	if !v.Allowed {
		_ = socksReply(c, socksRepRuleset)
		return
	}
	client := &bufConn{Conn: c, r: br}
	if v.Inspect || len(p.creds[host]) > 0 {
		if p.cfg.CA == nil || !p.cfg.CA.Permits(host) {
			p.record("socks", host, port, "", "", Verdict{Rule: v.Rule, Reason: ReasonNoInspection})
			_ = socksReply(c, socksRepRuleset)
			return
		}
		if _, err := p.resolveChecked(ctx, host, port); err != nil {
			if de, ok := errors.AsType[*DenyError](err); ok {
				p.record("socks", host, port, "", "", Verdict{Reason: de.Reason, Rule: de.Rule})
				_ = socksReply(c, socksRepRuleset)
			} else {
				_ = socksReply(c, socksRepHostUnr)
			}
			return
		}
		if socksReply(c, socksRepOK) != nil {
			return
		}
		p.intercept(ctx, client, host, port)
		return
	}
	upc, err := p.dialChecked(ctx, "socks", host, port)
	if err != nil {
		if _, ok := errors.AsType[*DenyError](err); ok {
			_ = socksReply(c, socksRepRuleset)
		} else {
			_ = socksReply(c, socksRepHostUnr)
		}
		return
	}
	defer upc.Close()
	if socksReply(c, socksRepOK) != nil {
		return
	}
	splice(client, upc)
}
