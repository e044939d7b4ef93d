package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// CurrentVersion is the only policy file version this build understands.
const CurrentVersion = 1

// maxFileSize bounds how much of a policy file is parsed.
const maxFileSize = 1 << 20

var lineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`) })

// Parse decodes one policy file strictly: unknown keys, wrong types and bad
// enum values are errors that carry line numbers, and `version: 1` is
// required. name is used in error messages only.
func Parse(name string, data []byte) (*File, error) {
	if len(data) > maxFileSize {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("file larger than %d bytes", maxFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	var errs ParseErrors
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{File: name, Msg: "empty policy: \"version: 1\" is required"}
		}
		// A type error still decodes the rest, so every problem in the
		// file is reported at once; any other error stops here.
		te, ok := errors.AsType[*yaml.TypeError](err)
		if !ok {
			return nil, yamlErrors(name, err)
		}
		errs = typeErrors(name, te)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, yamlErrors(name, err)
		}
		return nil, &ParseError{File: name, Line: line, Msg: "more than one YAML document"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlErrors(name, err)
	}
	if f.Version != CurrentVersion {
		line := keyLine(&root, "version")
		msg := fmt.Sprintf("unsupported version %d (want %d)", f.Version, CurrentVersion)
		if f.Version == 0 {
			msg = "\"version: 1\" is required"
		}
		errs = append(errs, &ParseError{File: name, Line: line, Msg: msg})
	}
	errs = append(errs, checkLayer(name, valueOf(&root), &f.Layer, "")...)
	profNode := valueOf(&root).lookup("profiles")
	for _, pname := range slices.Sorted(maps.Keys(f.Profiles)) {
		p := f.Profiles[pname]
		pn := profNode.lookup(pname)
		if !validName(pname) {
			errs = append(errs, &ParseError{File: name, Line: pn.keyLine, Msg: fmt.Sprintf("invalid profile name %q: use lowercase letters, digits, '-' and '_'", pname)})
		}
		errs = append(errs, checkLayer(name, pn, &p, "profiles."+pname+".")...)
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *ParseError) int { return a.Line - b.Line })
		return nil, errs
	}
	return &f, nil
}

// located is a mapping node with the line of the key that led to it.
type located struct {
	node    *yaml.Node
	keyLine int
}

func valueOf(doc *yaml.Node) located {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return located{node: doc.Content[0], keyLine: doc.Content[0].Line}
	}
	return located{node: doc, keyLine: doc.Line}
}

func (l located) lookup(key string) located {
	if l.node == nil || l.node.Kind != yaml.MappingNode {
		return located{keyLine: l.keyLine}
	}
	for i := 0; i+1 < len(l.node.Content); i += 2 {
		if l.node.Content[i].Value == key {
			return located{node: l.node.Content[i+1], keyLine: l.node.Content[i].Line}
		}
	}
	return located{keyLine: l.keyLine}
}

func keyLine(doc *yaml.Node, key string) int {
	return valueOf(doc).lookup(key).keyLine
}

func checkLayer(file string, n located, l *Layer, prefix string) ParseErrors {
	var errs ParseErrors
	bad := func(key, msg string) {
		errs = append(errs, &ParseError{File: file, Line: n.lookup(key).keyLine, Msg: prefix + key + ": " + msg})
	}
	if l.Mode != nil && !slices.Contains([]Mode{ModeSandbox, ModeRX, ModeRWX}, *l.Mode) {
		bad("mode", fmt.Sprintf("invalid value %q (want sandbox, rx or rwx)", *l.Mode))
	}
	if l.Backend != nil && !slices.Contains([]Backend{BackendAuto, BackendBwrap, BackendLandlock, BackendSeatbelt, BackendNone}, *l.Backend) {
		bad("backend", fmt.Sprintf("invalid value %q (want auto, bwrap, landlock, seatbelt or none)", *l.Backend))
	}
	if l.Landlock != nil && *l.Landlock != LayerRequired && *l.Landlock != LayerBestEffort {
		bad("landlock", fmt.Sprintf("invalid value %q (want required or best-effort)", *l.Landlock))
	}
	if l.Extends != "" && !validName(l.Extends) {
		bad("extends", fmt.Sprintf("invalid profile name %q", l.Extends))
	}
	for _, k := range []struct {
		key  string
		list []string
	}{{"read_paths", l.ReadPaths}, {"write_paths", l.WritePaths}, {"state_paths", l.StatePaths}, {"write_files", l.WriteFiles}, {"deny_paths", l.DenyPaths}} {
		for _, p := range k.list {
			if msg := checkPathSyntax(p); msg != "" {
				bad(k.key, msg)
			}
		}
	}
	for _, h := range l.AllowHidden {
		if !strings.HasPrefix(h, ".") || strings.Contains(h, "/") || h == "." || h == ".." {
			bad("allow_hidden", fmt.Sprintf("%q is not a dotfile name (want e.g. \".github\")", h))
		}
	}
	if l.Env != nil {
		en := n.lookup("env")
		for _, v := range l.Env.Passthrough {
			if !validEnvPattern(v) {
				errs = append(errs, &ParseError{File: file, Line: en.lookup("passthrough").keyLine, Msg: prefix + fmt.Sprintf("env.passthrough: invalid variable name %q", v)})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(l.Env.Set)) {
			if !validEnvName(k) {
				errs = append(errs, &ParseError{File: file, Line: en.lookup("set").keyLine, Msg: prefix + fmt.Sprintf("env.set: invalid variable name %q", k)})
			}
		}
	}
	if l.Network != nil {
		nn := n.lookup("network")
		if m := l.Network.Mode; m != nil && !slices.Contains([]NetMode{NetBlocked, NetOpen, NetFiltered}, *m) {
			errs = append(errs, &ParseError{File: file, Line: nn.lookup("mode").keyLine, Msg: prefix + fmt.Sprintf("network.mode: invalid value %q (want blocked, open or filtered)", *m)})
		}
		if o := l.Network.OnUnavailable; o != nil && *o != "deny" && *o != "allow" {
			errs = append(errs, &ParseError{File: file, Line: nn.lookup("on_unavailable").keyLine, Msg: prefix + fmt.Sprintf("network.on_unavailable: invalid value %q (want deny or allow)", *o)})
		}
		if o := l.Network.OnUnknown; o != nil && *o != "deny" && *o != "ask" {
			errs = append(errs, &ParseError{File: file, Line: nn.lookup("on_unknown").keyLine, Msg: prefix + fmt.Sprintf("network.on_unknown: invalid value %q (want deny or ask)", *o)})
		}
		for _, d := range l.Network.DNS {
			if ap, err := netip.ParseAddrPort(d); err != nil || !ap.IsValid() {
				errs = append(errs, &ParseError{File: file, Line: nn.lookup("dns").keyLine, Msg: prefix + fmt.Sprintf("network.dns: %q is not IP:port", d)})
			}
		}
		for _, c := range l.Network.Credentials {
			cl := nn.lookup("credentials").keyLine
			switch {
			case strings.TrimSpace(c.Host) == "" || strings.ContainsAny(c.Host, "/@ \x00\r\n"):
				errs = append(errs, &ParseError{File: file, Line: cl, Msg: prefix + fmt.Sprintf("network.credentials: invalid host %q", c.Host)})
			case (c.Secret == "") == (c.FromEnv == ""):
				errs = append(errs, &ParseError{File: file, Line: cl, Msg: prefix + fmt.Sprintf("network.credentials for %s: give exactly one of secret and from_env", c.Host)})
			case c.Secret != "" && !validSecretName(c.Secret):
				errs = append(errs, &ParseError{File: file, Line: cl, Msg: prefix + fmt.Sprintf("network.credentials: secret %q must be a name like anthropic-api-key", c.Secret)})
			case c.FromEnv != "" && !validEnvName(c.FromEnv):
				errs = append(errs, &ParseError{File: file, Line: cl, Msg: prefix + fmt.Sprintf("network.credentials: invalid from_env variable name %q", c.FromEnv)})
			case c.Env != "" && !validEnvName(c.Env):
				errs = append(errs, &ParseError{File: file, Line: cl, Msg: prefix + fmt.Sprintf("network.credentials: invalid variable name %q", c.Env)})
			case c.Header != "" && strings.ContainsAny(c.Header, ": \r\n\x00"):
				errs = append(errs, &ParseError{File: file, Line: cl, Msg: prefix + fmt.Sprintf("network.credentials: invalid header %q", c.Header)})
			}
		}
		for _, key := range []string{"allow", "deny", "rules"} {
			var list []string
			switch key {
			case "allow":
				list = l.Network.Allow
			case "deny":
				list = l.Network.Deny
			default:
				list = l.Network.Rules
			}
			for _, v := range list {
				if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "\x00\r\n") {
					errs = append(errs, &ParseError{File: file, Line: nn.lookup(key).keyLine, Msg: prefix + fmt.Sprintf("network.%s: invalid entry %q", key, v)})
				}
			}
		}
	}
	if l.Limits != nil {
		ln := n.lookup("limits")
		for key, v := range map[string]*int64{"processes": l.Limits.Processes, "open_files": l.Limits.OpenFiles, "cpu_seconds": l.Limits.CPUSeconds} {
			if v != nil && *v < 0 {
				errs = append(errs, &ParseError{File: file, Line: ln.lookup(key).keyLine, Msg: prefix + "limits." + key + ": must not be negative"})
			}
		}
	}
	for _, p := range l.UnixSockets {
		if msg := checkPathSyntax(p); msg != "" {
			bad("unix_sockets", msg)
		}
	}
	for _, s := range l.Skills {
		if s != "all" && !validName(s) {
			bad("skills", fmt.Sprintf("invalid skill name %q", s))
		}
	}
	return errs
}

func checkPathSyntax(p string) string {
	switch {
	case strings.TrimSpace(p) == "":
		return "empty path"
	case strings.ContainsRune(p, 0):
		return fmt.Sprintf("path %q contains NUL", p)
	case !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "$") && !strings.HasPrefix(p, "."):
		return fmt.Sprintf("path %q must be absolute or start with ~, $VAR or ./", p)
	}
	return ""
}

// validName: 1–64 of lowercase letters, digits, '-' and '_', not starting
// with '-' or '_'.
func validName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' || s[0] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// validEnvName: a POSIX-style variable name.
func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// validSecretName: 1–128 of letters, digits, '-', '_' and '.'.
func validSecretName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !secretNameByte(s[i]) {
			return false
		}
	}
	return true
}

func secretNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// validEnvPattern: a variable name, optionally ending in '*' (a prefix).
func validEnvPattern(s string) bool { return validEnvName(strings.TrimSuffix(s, "*")) }

func yamlErrors(file string, err error) error {
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		return typeErrors(file, te)
	}
	return ParseErrors{lineError(file, err.Error())}
}

func typeErrors(file string, te *yaml.TypeError) ParseErrors {
	errs := make(ParseErrors, 0, len(te.Errors))
	for _, m := range te.Errors {
		errs = append(errs, lineError(file, m))
	}
	return errs
}

func lineError(file, msg string) *ParseError {
	if m := lineRE().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &ParseError{File: file, Line: n, Msg: cleanYAMLMsg(m[2])}
	}
	return &ParseError{File: file, Msg: cleanYAMLMsg(strings.TrimPrefix(msg, "yaml: "))}
}

// cleanYAMLMsg rewrites the decoder's Go type names into policy terms.
func cleanYAMLMsg(m string) string {
	if i := strings.Index(m, " not found in type "); i >= 0 && strings.HasPrefix(m, "field ") {
		return "unknown key \"" + m[len("field "):i] + "\""
	}
	return m
}
