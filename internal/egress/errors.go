package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("egress: proxy closed")

// DenyError is a denial as a value; the proxy's responses, the audit log
// and callers render from its fields.
type DenyError struct {
	Reason string     // a Reason* kind
	Rule   string     // the pattern that decided, if any
	Host   string     // normalised destination host
	Port   int        // destination port
	Addr   netip.Addr // the refused address, for address-policy denials
}

func (e *DenyError) Error() string {
	if e.Addr.IsValid() {
		return fmt.Sprintf("egress: %s denied (%s, address %s)", hostPort(e.Host, e.Port), e.Reason, e.Addr)
	}
	return fmt.Sprintf("egress: %s denied (%s)", hostPort(e.Host, e.Port), e.Reason)
}

// Decision is an answer from Config.Ask.
type Decision int

// Ask answers. The zero value denies.
const (
	DecisionDeny Decision = iota
	DecisionAllow
)

func (d Decision) String() string {
	if d == DecisionAllow {
		return "allow"
	}
	return "deny"
}
