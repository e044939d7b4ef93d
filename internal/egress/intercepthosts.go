package egress

import (
	"slices"
)

// InterceptHosts returns the hosts that cfg may intercept: every host named
// by a rule and every credential host, as "name", "*.suffix" or an IP
// literal. Pass it as mitm.Options.Permitted so that the session CA is
// name-constrained to exactly these hosts. Rules on CIDRs cannot be
// expressed as constraints and are left out (tunnels to them are refused
// as inspection-unavailable unless the CA is unconstrained).
func InterceptHosts(cfg Config) ([]string, error) {
	m, err := CompileMatcher(nil, nil, cfg.Rules)
	if err != nil {
		return nil, err
	}
	var out []string
	for name := range m.rules.exact {
		out = append(out, name)
	}
	for suffix := range m.rules.wild {
		out = append(out, "*."+suffix)
	}
	for a := range m.rules.addrs {
		out = append(out, a.String())
	}
	for _, c := range cfg.Credentials {
		h, err := NormalizeHost(c.Host)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
