package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Manifest file names. omac.yaml is read as-is so omac bundles run
// unchanged; warden.yaml has the same schema. A skill may have one, not
// both.
const (
	OmacManifest   = "omac.yaml"
	WardenManifest = "warden.yaml"
)

// Health-check defaults.
const (
	DefaultHealthPath = "/status"
	DefaultTimeoutMS  = 5000
	DefaultIntervalMS = 500
)

// Config field types.
const (
	TypeString = "string"
	TypeBool   = "bool"
	TypeInt    = "int"
	TypeEnum   = "enum"
)

var (
	mountRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	envRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Manifest is the sidecar contract of a skill (the omac.yaml schema).
type Manifest struct {
	Name        string `yaml:"name" json:"name"`
	Type        string `yaml:"type,omitempty" json:"type,omitempty"`
	Version     string `yaml:"version,omitempty" json:"version,omitempty"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	Author      string `yaml:"author,omitempty" json:"author,omitempty"`
	// Dependencies is informational and may have any shape.
	Dependencies any      `yaml:"dependencies,omitempty" json:"dependencies,omitempty"`
	Sidecar      *Sidecar `yaml:"sidecar,omitempty" json:"sidecar,omitempty"`
}

// Sidecar describes the REST sidecar that holds the skill's secrets.
type Sidecar struct {
	// Command is the argv, run with the snapshot as its working directory.
	// ${VAR} references are expanded by [Sidecar.ExpandCommand].
	Command        []string          `yaml:"command" json:"command"`
	Mount          string            `yaml:"mount,omitempty" json:"mount,omitempty"`
	EnvPassthrough []string          `yaml:"env_passthrough,omitempty" json:"env_passthrough,omitempty"`
	Secrets        []SecretSpec      `yaml:"secrets,omitempty" json:"secrets,omitempty"`
	Config         []ConfigSpec      `yaml:"config,omitempty" json:"config,omitempty"`
	Health         Health            `yaml:"health,omitempty" json:"health"`
	InstallScripts map[string]string `yaml:"install_scripts,omitempty" json:"install_scripts,omitempty"`
	// Protocols is informational and may have any shape.
	Protocols any    `yaml:"protocols,omitempty" json:"protocols,omitempty"`
	Limits    Limits `yaml:"limits,omitempty" json:"limits"`
	// Network, a warden extension, confines the sidecar's own traffic:
	// it then runs in an empty network namespace, reached only through
	// warden, and its requests leave through warden's egress proxy under
	// these rules (the same syntax as a policy's network section).
	// Without it the sidecar shares the host's network, as under omac.
	Network *SidecarNetwork `yaml:"network,omitempty" json:"network,omitempty"`
}

// SidecarNetwork is a sidecar's egress policy.
type SidecarNetwork struct {
	Allow                    []string          `yaml:"allow,omitempty" json:"allow,omitempty"`
	Deny                     []string          `yaml:"deny,omitempty" json:"deny,omitempty"`
	Rules                    []string          `yaml:"rules,omitempty" json:"rules,omitempty"`
	Hosts                    map[string]string `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	AllowPrivateDestinations bool              `yaml:"allow_private_destinations,omitempty" json:"allow_private_destinations,omitempty"`
}

// SecretSpec declares a secret the sidecar receives in its environment.
type SecretSpec struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Required defaults to true; use [SecretSpec.IsRequired].
	Required *bool `yaml:"required,omitempty" json:"required,omitempty"`
	// Pattern is a Go regexp the value must match; it is unanchored unless
	// the author anchors it.
	Pattern        string `yaml:"pattern,omitempty" json:"pattern,omitempty"`
	DefaultFromEnv string `yaml:"default_from_env,omitempty" json:"default_from_env,omitempty"`
	Multiline      bool   `yaml:"multiline,omitempty" json:"multiline,omitempty"`
}

// IsRequired reports whether the secret must be set (the default).
func (s SecretSpec) IsRequired() bool { return s.Required == nil || *s.Required }

// ConfigSpec declares a non-secret config value.
type ConfigSpec struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Type is string (the default), bool, int or enum.
	Type     string `yaml:"type,omitempty" json:"type"`
	Required bool   `yaml:"required,omitempty" json:"required,omitempty"`
	// Default is type-checked when the manifest is parsed.
	Default        *string  `yaml:"default,omitempty" json:"default,omitempty"`
	DefaultFromEnv string   `yaml:"default_from_env,omitempty" json:"default_from_env,omitempty"`
	Pattern        string   `yaml:"pattern,omitempty" json:"pattern,omitempty"`
	Choices        []string `yaml:"choices,omitempty" json:"choices,omitempty"`
}

// Health configures the sidecar readiness probe.
type Health struct {
	Path string `yaml:"path,omitempty" json:"path"`
	// InitialDelayMS is accepted for omac compatibility but ignored: warden
	// polls from the start, so a fast sidecar is ready sooner.
	InitialDelayMS int `yaml:"initial_delay_ms,omitempty" json:"initial_delay_ms,omitempty"`
	TimeoutMS      int `yaml:"timeout_ms,omitempty" json:"timeout_ms"`
	IntervalMS     int `yaml:"interval_ms,omitempty" json:"interval_ms"`
}

// Limits bound traffic to the sidecar; zero means the facade's default.
type Limits struct {
	MaxBodyBytes    int64 `yaml:"max_body_bytes,omitempty" json:"max_body_bytes,omitempty"`
	IdleTimeoutSecs int   `yaml:"idle_timeout_secs,omitempty" json:"idle_timeout_secs,omitempty"`
}

// reservedEnv reports names a secret or config field may not take: warden
// sets them, or they change how the sidecar's runtime loads code. A
// passthrough copies the host's own value, so it is barred only from the
// names warden sets (see setByWarden).
func reservedEnv(name string) bool {
	u := strings.ToUpper(name)
	if setByWarden(u) {
		return true
	}
	switch u {
	case "PATH", "HOME", "BASH_ENV", "ENV",
		"NODE_OPTIONS", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS", "GOFLAGS":
		return true
	}
	for _, p := range []string{"LD_", "DYLD_", "BASH_FUNC_"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// setByWarden reports names warden itself sets in the sidecar environment.
func setByWarden(name string) bool {
	u := strings.ToUpper(name)
	return u == "SIDECAR_PORT" || u == "SIDECAR_SKILL" || strings.HasPrefix(u, "WARDEN_")
}

// ParseManifest decodes and validates a manifest strictly: unknown keys,
// wrong types and invalid values are errors with line numbers. Defaults are
// filled in (mount, health, secret required, config type).
func ParseManifest(file string, data []byte) (*Manifest, error) {
	var m Manifest
	doc, err := decodeStrict(file, data, 0, &m)
	if err != nil {
		return nil, err
	}
	if errs := m.validate(file, doc); len(errs) > 0 {
		return nil, errs
	}
	m.provision()
	return &m, nil
}

func (m *Manifest) provision() {
	sc := m.Sidecar
	if sc == nil {
		return
	}
	if sc.Mount == "" {
		sc.Mount = m.Name
	}
	if sc.Health.Path == "" {
		sc.Health.Path = DefaultHealthPath
	}
	if sc.Health.TimeoutMS == 0 {
		sc.Health.TimeoutMS = DefaultTimeoutMS
	}
	if sc.Health.IntervalMS == 0 {
		sc.Health.IntervalMS = DefaultIntervalMS
	}
	for i := range sc.Secrets {
		if sc.Secrets[i].Required == nil {
			t := true
			sc.Secrets[i].Required = &t
		}
	}
	for i := range sc.Config {
		if sc.Config[i].Type == "" {
			sc.Config[i].Type = TypeString
		}
	}
}

// validate runs the checks in order and returns every failure.
func (m *Manifest) validate(file string, doc *yaml.Node) ParseErrors {
	var errs ParseErrors
	add := func(msg string, path ...any) {
		errs = append(errs, &ParseError{File: file, Line: lineOf(doc, path...), Field: fieldPath(path), Msg: msg})
	}
	switch {
	case m.Name == "":
		add("required", "name")
	case !ValidName(m.Name):
		add(fmt.Sprintf("invalid name %q: use 1 to %d lowercase letters, digits and single hyphens, not at either end", m.Name, MaxNameLen), "name")
	}
	sc := m.Sidecar
	if sc == nil {
		return errs
	}
	if len(sc.Command) == 0 || sc.Command[0] == "" {
		add("required: a non-empty argv", "sidecar", "command")
	}
	for i, a := range sc.Command {
		if strings.ContainsRune(a, 0) {
			add("NUL byte in argument", "sidecar", "command", i)
		}
	}
	if sc.Mount != "" && (!mountRE.MatchString(sc.Mount) || len(sc.Mount) > MaxNameLen) {
		add(fmt.Sprintf("invalid mount %q: want ^[a-z0-9][a-z0-9-]*$, at most %d characters", sc.Mount, MaxNameLen), "sidecar", "mount")
	}

	envName := func(kind, name string, path ...any) bool {
		reserved := reservedEnv
		if kind == "env_passthrough" {
			reserved = setByWarden
		}
		switch {
		case name == "":
			add(kind+" name is required", path...)
		case !envRE.MatchString(name):
			add(fmt.Sprintf("invalid %s name %q: want an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", kind, name), path...)
		case reserved(name):
			add(fmt.Sprintf("%s name %q is reserved", kind, name), path...)
		default:
			return true
		}
		return false
	}
	fromEnv := func(name string, path ...any) {
		if name != "" && !envRE.MatchString(name) {
			add(fmt.Sprintf("invalid environment variable name %q", name), path...)
		}
	}

	passthrough := map[string]bool{}
	for i, n := range sc.EnvPassthrough {
		p := []any{"sidecar", "env_passthrough", i}
		if envName("env_passthrough", n, p...) {
			if passthrough[n] {
				add(fmt.Sprintf("duplicate %q", n), p...)
			}
			passthrough[n] = true
		}
	}

	secretNames := map[string]bool{}
	for i, s := range sc.Secrets {
		p := []any{"sidecar", "secrets", i}
		if envName("secret", s.Name, append(p, "name")...) {
			if secretNames[s.Name] {
				add(fmt.Sprintf("duplicate secret %q", s.Name), append(p, "name")...)
			}
			secretNames[s.Name] = true
		}
		if s.Pattern != "" {
			if _, err := regexp.Compile(s.Pattern); err != nil {
				add(fmt.Sprintf("pattern does not compile: %v", err), append(p, "pattern")...)
			}
		}
		fromEnv(s.DefaultFromEnv, append(p, "default_from_env")...)
	}

	configNames := map[string]bool{}
	for i, c := range sc.Config {
		p := []any{"sidecar", "config", i}
		if envName("config", c.Name, append(p, "name")...) {
			switch {
			case configNames[c.Name]:
				add(fmt.Sprintf("duplicate config field %q", c.Name), append(p, "name")...)
			case secretNames[c.Name]:
				add(fmt.Sprintf("%q is both a secret and a config field", c.Name), append(p, "name")...)
			case passthrough[c.Name]:
				add(fmt.Sprintf("%q is both a config field and in env_passthrough", c.Name), append(p, "name")...)
			}
			configNames[c.Name] = true
		}
		typ := c.Type
		if typ == "" {
			typ = TypeString
		}
		switch typ {
		case TypeString, TypeBool, TypeInt, TypeEnum:
		default:
			add(fmt.Sprintf("unknown type %q: want string, bool, int or enum", c.Type), append(p, "type")...)
			continue
		}
		if c.Pattern != "" && typ != TypeString {
			add("pattern is allowed only for type string", append(p, "pattern")...)
		}
		if len(c.Choices) > 0 && typ != TypeEnum {
			add("choices are allowed only for type enum", append(p, "choices")...)
		}
		if typ == TypeEnum {
			if len(c.Choices) == 0 {
				add("type enum needs choices", append(p, "type")...)
			}
			seen := map[string]bool{}
			for j, ch := range c.Choices {
				if seen[ch] {
					add(fmt.Sprintf("duplicate choice %q", ch), append(p, "choices", j)...)
				}
				seen[ch] = true
			}
		}
		var re *regexp.Regexp
		if c.Pattern != "" && typ == TypeString {
			var err error
			if re, err = regexp.Compile(c.Pattern); err != nil {
				add(fmt.Sprintf("pattern does not compile: %v", err), append(p, "pattern")...)
			}
		}
		if c.Default != nil {
			if msg := checkValue(typ, c.Choices, re, *c.Default); msg != "" {
				add("default "+msg, append(p, "default")...)
			}
		}
		fromEnv(c.DefaultFromEnv, append(p, "default_from_env")...)
	}

	if n := sc.Network; n != nil {
		for _, l := range []struct {
			key  string
			list []string
		}{{"allow", n.Allow}, {"deny", n.Deny}, {"rules", n.Rules}} {
			for i, e := range l.list {
				if strings.TrimSpace(e) == "" || strings.ContainsAny(e, "\x00\r\n") {
					add(fmt.Sprintf("invalid entry %q", e), "sidecar", "network", l.key, i)
				}
			}
		}
	}

	h := sc.Health
	if h.Path != "" && (!strings.HasPrefix(h.Path, "/") || strings.ContainsAny(h.Path, " \t\r\n?#")) {
		add(fmt.Sprintf("invalid path %q: want an absolute URL path", h.Path), "sidecar", "health", "path")
	}
	if h.InitialDelayMS < 0 || h.InitialDelayMS > 600_000 {
		add("must be between 0 and 600000", "sidecar", "health", "initial_delay_ms")
	}
	if h.TimeoutMS < 0 || h.TimeoutMS > 600_000 {
		add("must be between 0 and 600000", "sidecar", "health", "timeout_ms")
	}
	if h.IntervalMS < 0 || h.IntervalMS > 60_000 {
		add("must be between 0 and 60000", "sidecar", "health", "interval_ms")
	}
	for _, k := range slices.Sorted(maps.Keys(sc.InstallScripts)) {
		v := sc.InstallScripts[k]
		switch k {
		case "macos", "linux", "wsl":
		default:
			add(fmt.Sprintf("unknown platform %q: want macos, linux or wsl", k), "sidecar", "install_scripts", k)
		}
		if !localPath(v) {
			add(fmt.Sprintf("%q must be a relative path inside the skill", v), "sidecar", "install_scripts", k)
		}
	}
	if sc.Limits.MaxBodyBytes < 0 {
		add("must not be negative", "sidecar", "limits", "max_body_bytes")
	}
	if sc.Limits.IdleTimeoutSecs < 0 {
		add("must not be negative", "sidecar", "limits", "idle_timeout_secs")
	}
	slices.SortStableFunc(errs, func(a, b *ParseError) int { return a.Line - b.Line })
	return errs
}

// checkValue returns "" if v is a valid value of the config type, or why
// not.
func checkValue(typ string, choices []string, re *regexp.Regexp, v string) string {
	switch typ {
	case TypeBool:
		if v != "true" && v != "false" {
			return fmt.Sprintf("%q is not a bool (true or false)", v)
		}
	case TypeInt:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Sprintf("%q is not an int", v)
		}
	case TypeEnum:
		if !slices.Contains(choices, v) {
			return fmt.Sprintf("%q is not one of %s", v, strings.Join(choices, ", "))
		}
	case TypeString:
		if strings.ContainsRune(v, 0) {
			return "holds a NUL byte"
		}
		if re != nil && !re.MatchString(v) {
			return fmt.Sprintf("%q does not match pattern %s", v, re)
		}
	default:
		return fmt.Sprintf("unknown type %q", typ)
	}
	return ""
}

func fieldPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		}
	}
	return b.String()
}

func localPath(p string) bool {
	return p != "" && !strings.ContainsRune(p, 0) && filepath.IsLocal(filepath.FromSlash(p)) && path.Clean(p) != "."
}

// ExpandCommand returns the sidecar argv with ${VAR} and $VAR references
// replaced by lookup(VAR); unknown variables (lookup returns false) become
// empty. "$$" is a literal "$".
func (sc *Sidecar) ExpandCommand(lookup func(string) (string, bool)) []string {
	out := make([]string, len(sc.Command))
	for i, a := range sc.Command {
		out[i] = expand(a, lookup)
	}
	return out
}

func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch c := s[i+1]; {
		case c == '$':
			b.WriteByte('$')
			i++
		case c == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				b.WriteString(s[i:]) // unterminated: keep as written
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			}
			i += 2 + end
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			if v, ok := lookup(s[i+1 : j]); ok {
				b.WriteString(v)
			}
			i = j - 1
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// LoadManifest reads the manifest of the skill in dir: omac.yaml or
// warden.yaml. Both present is an error; neither is [ErrNoManifest].
func LoadManifest(dir string) (*Manifest, string, error) {
	var found []string
	for _, n := range []string{OmacManifest, WardenManifest} {
		fi, err := os.Lstat(filepath.Join(dir, n))
		switch {
		case err == nil && fi.Mode().IsRegular():
			found = append(found, n)
		case err == nil:
			return nil, "", fmt.Errorf("skills: %s is not a regular file", filepath.Join(dir, n))
		case !errors.Is(err, fs.ErrNotExist):
			return nil, "", fmt.Errorf("skills: %w", err)
		}
	}
	switch len(found) {
	case 0:
		return nil, "", fmt.Errorf("%w in %s", ErrNoManifest, dir)
	case 2:
		return nil, "", fmt.Errorf("skills: %s holds both %s and %s: keep one", dir, OmacManifest, WardenManifest)
	}
	p := filepath.Join(dir, found[0])
	data, err := readLimited(p, maxYAMLBytes)
	if err != nil {
		return nil, "", err
	}
	m, err := ParseManifest(p, data)
	return m, p, err
}

func readLimited(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p) //nolint:gosec // G304: reading skill files is the point; size and type are checked
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("skills: %s is not a regular file", p)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("skills: %s is larger than %d bytes", p, limit)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("skills: read %s: %w", p, err)
	}
	return data, nil
}
