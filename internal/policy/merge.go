package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Source is one policy layer with the name it is reported under
// ("builtin", "user:~/.config/warden/policy.yaml", "flags", ...).
type Source struct {
	Name string
	File *File
}

// MergeInput is everything Merge layers, lowest precedence first.
type MergeInput struct {
	Sources []Source // builtin defaults first; each file's base layer
	Profile string   // selected profile, "" for none
	Flags   *Layer   // command-line flags, highest precedence
}

// Merge layers the sources, the selected profile (with its extends chain) and
// the flags into one Spec.
func Merge(in MergeInput) (*Spec, error) {
	profiles := map[string]profileDef{}
	for _, src := range in.Sources {
		if src.File == nil {
			continue
		}
		for name, p := range src.File.Profiles {
			profiles[name] = profileDef{layer: p, source: src.Name}
		}
	}
	s := &Spec{Sources: map[string][]string{}, Env: EnvSpec{Set: map[string]string{}}, Network: NetworkSpec{Hosts: map[string]string{}}}
	for _, src := range in.Sources {
		if src.File == nil {
			continue
		}
		chain, err := extendsChain(src.File.Extends, profiles, src.Name)
		if err != nil {
			return nil, err
		}
		for _, p := range chain {
			s.apply(&p.layer, "profile "+p.name+" ("+p.source+")")
		}
		s.apply(&src.File.Layer, src.Name)
	}
	if in.Profile != "" {
		if _, ok := profiles[in.Profile]; !ok {
			return nil, &ValidationError{Field: "profile", Source: "flags", Msg: fmt.Sprintf("unknown profile %q (known: %s)", in.Profile, strings.Join(slices.Sorted(maps.Keys(profiles)), ", "))}
		}
		chain, err := extendsChain(in.Profile, profiles, "flags")
		if err != nil {
			return nil, err
		}
		for _, p := range chain {
			s.apply(&p.layer, "profile "+p.name+" ("+p.source+")")
		}
		s.Profile = in.Profile
	}
	if in.Flags != nil {
		s.apply(in.Flags, "flags")
	}
	return s, nil
}

type profileDef struct {
	name   string
	layer  Layer
	source string
}

// extendsChain returns the profile named and its ancestors, root first.
func extendsChain(name string, profiles map[string]profileDef, from string) ([]profileDef, error) {
	var chain []profileDef
	seen := map[string]bool{}
	for name != "" {
		if seen[name] {
			return nil, &ValidationError{Field: "extends", Source: from, Msg: fmt.Sprintf("profile cycle through %q", name)}
		}
		seen[name] = true
		p, ok := profiles[name]
		if !ok {
			return nil, &ValidationError{Field: "extends", Source: from, Msg: fmt.Sprintf("unknown profile %q", name)}
		}
		p.name = name
		chain = append(chain, p)
		name = p.layer.Extends
	}
	slices.Reverse(chain)
	return chain, nil
}

func (s *Spec) note(field, src string) {
	if l := s.Sources[field]; len(l) == 0 || l[len(l)-1] != src {
		s.Sources[field] = append(l, src)
	}
}

func (s *Spec) apply(l *Layer, src string) {
	if l.Mode != nil {
		s.Mode = *l.Mode
		s.note("mode", src)
	}
	if l.Backend != nil {
		s.Backend = *l.Backend
		s.note("backend", src)
	}
	if l.Landlock != nil {
		s.Landlock = *l.Landlock
		s.note("landlock", src)
	}
	if l.StartInScratch != nil {
		s.StartInScratch = *l.StartInScratch
		s.note("start_in_scratch", src)
	}
	s.ReadPaths = s.union("read_paths", s.ReadPaths, l.ReadPaths, src)
	s.WritePaths = s.union("write_paths", s.WritePaths, l.WritePaths, src)
	s.StatePaths = s.union("state_paths", s.StatePaths, l.StatePaths, src)
	s.WriteFiles = s.union("write_files", s.WriteFiles, l.WriteFiles, src)
	s.DenyPaths = s.union("deny_paths", s.DenyPaths, l.DenyPaths, src)
	s.AllowHidden = s.union("allow_hidden", s.AllowHidden, l.AllowHidden, src)
	s.Skills = s.union("skills", s.Skills, l.Skills, src)
	s.UnixSockets = s.union("unix_sockets", s.UnixSockets, l.UnixSockets, src)
	if l.Env != nil {
		s.Env.Passthrough = s.union("env.passthrough", s.Env.Passthrough, l.Env.Passthrough, src)
		if len(l.Env.Set) > 0 {
			maps.Copy(s.Env.Set, l.Env.Set)
			s.note("env.set", src)
		}
	}
	if n := l.Network; n != nil {
		if n.Mode != nil {
			s.Network.Mode = *n.Mode
			s.note("network.mode", src)
		}
		s.Network.Allow = s.union("network.allow", s.Network.Allow, n.Allow, src)
		s.Network.Deny = s.union("network.deny", s.Network.Deny, n.Deny, src)
		s.Network.Rules = s.union("network.rules", s.Network.Rules, n.Rules, src)
		if n.AllowPrivateDestinations != nil {
			s.Network.AllowPrivate = *n.AllowPrivateDestinations
			s.note("network.allow_private_destinations", src)
		}
		if len(n.Hosts) > 0 {
			maps.Copy(s.Network.Hosts, n.Hosts)
			s.note("network.hosts", src)
		}
		for _, c := range n.Credentials {
			i := slices.IndexFunc(s.Network.Credentials, func(o Credential) bool { return o.Host == c.Host && o.Header == c.Header })
			if i >= 0 {
				s.Network.Credentials[i] = c
			} else {
				s.Network.Credentials = append(s.Network.Credentials, c)
			}
			s.note("network.credentials", src)
		}
		if len(n.DNS) > 0 {
			s.Network.DNS = s.union("network.dns", s.Network.DNS, n.DNS, src)
		}
		if len(n.UpstreamRoots) > 0 {
			s.Network.UpstreamRoots = s.union("network.upstream_roots", s.Network.UpstreamRoots, n.UpstreamRoots, src)
		}
		if n.OnUnavailable != nil {
			s.Network.OnUnavailable = *n.OnUnavailable
			s.note("network.on_unavailable", src)
		}
		if n.OnUnknown != nil {
			s.Network.OnUnknown = *n.OnUnknown
			s.note("network.on_unknown", src)
		}
	}
	if lim := l.Limits; lim != nil {
		set := func(field string, dst *int64, v *int64) {
			if v != nil {
				*dst = *v
				s.note("limits."+field, src)
			}
		}
		set("processes", &s.Limits.Processes, lim.Processes)
		set("open_files", &s.Limits.OpenFiles, lim.OpenFiles)
		set("cpu_seconds", &s.Limits.CPUSeconds, lim.CPUSeconds)
		if lim.Memory != nil {
			s.Limits.Memory = int64(*lim.Memory)
			s.note("limits.memory", src)
		}
		if lim.FileSize != nil {
			s.Limits.FileSize = int64(*lim.FileSize)
			s.note("limits.file_size", src)
		}
	}
	if l.Tools != nil {
		s.ToolsDeny = s.union("tools.deny", s.ToolsDeny, l.Tools.Deny, src)
	}
}

func (s *Spec) union(field string, dst, add []string, src string) []string {
	if len(add) == 0 {
		return dst
	}
	s.note(field, src)
	for _, v := range add {
		if !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}
