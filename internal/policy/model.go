package policy

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mode is the filesystem mode.
type Mode string

// Filesystem modes (omega's three modes).
const (
	// ModeSandbox shows system dirs read-only, the workdir read-write and
	// nothing of $HOME except granted paths.
	ModeSandbox Mode = "sandbox"
	// ModeRX reads anywhere except protected paths and writes only the
	// workdir, granted paths and a private /tmp.
	ModeRX Mode = "rx"
	// ModeRWX is the explicit full-filesystem opt-out. It is printed loudly.
	ModeRWX Mode = "rwx"
)

// NetMode is the network mode.
type NetMode string

// Network modes.
const (
	NetBlocked  NetMode = "blocked"
	NetOpen     NetMode = "open"
	NetFiltered NetMode = "filtered"
)

// Backend names a sandbox backend choice.
type Backend string

// Backends.
const (
	BackendAuto     Backend = "auto"
	BackendBwrap    Backend = "bwrap"
	BackendLandlock Backend = "landlock"
	BackendSeatbelt Backend = "seatbelt"
	BackendNone     Backend = "none"
)

// LayerMode says whether a defence-in-depth layer must be enforced in full.
type LayerMode string

// Layer modes.
const (
	// LayerRequired refuses to run when the kernel cannot enforce the layer.
	LayerRequired LayerMode = "required"
	// LayerBestEffort enforces what the kernel supports and says so.
	LayerBestEffort LayerMode = "best-effort"
)

// File is one policy file as written.
type File struct {
	Version  int              `yaml:"version"`
	Profiles map[string]Layer `yaml:"profiles,omitempty"`
	Layer    `yaml:",inline"`
}

// Layer is a partial policy: every field is optional. Scalars set in a later
// layer override earlier ones; lists are unioned (deny wins regardless of
// order); maps are merged key by key.
type Layer struct {
	Extends        string     `yaml:"extends,omitempty"`
	Mode           *Mode      `yaml:"mode,omitempty"`
	Backend        *Backend   `yaml:"backend,omitempty"`
	Landlock       *LayerMode `yaml:"landlock,omitempty"`
	StartInScratch *bool      `yaml:"start_in_scratch,omitempty"`
	ReadPaths      []string   `yaml:"read_paths,omitempty"`
	WritePaths     []string   `yaml:"write_paths,omitempty"`
	// StatePaths are writable directories that hold a program's own state
	// (a harness's managed home), not a project: the project protections
	// (.git, editor and agent config at their top) are not placed in them.
	// Secrets and deny_paths still apply.
	StatePaths  []string      `yaml:"state_paths,omitempty"`
	WriteFiles  []string      `yaml:"write_files,omitempty"`
	DenyPaths   []string      `yaml:"deny_paths,omitempty"`
	AllowHidden []string      `yaml:"allow_hidden,omitempty"`
	Env         *EnvLayer     `yaml:"env,omitempty"`
	Network     *NetworkLayer `yaml:"network,omitempty"`
	Limits      *LimitsLayer  `yaml:"limits,omitempty"`
	Skills      []string      `yaml:"skills,omitempty"`
	Tools       *ToolsLayer   `yaml:"tools,omitempty"`
	// UnixSockets are Unix socket paths the sandbox may connect to (an
	// escape hatch: docker.sock is root on the host). Creating AF_UNIX
	// sockets is otherwise refused by seccomp.
	UnixSockets []string `yaml:"unix_sockets,omitempty"`
}

// EnvLayer controls the sandbox environment.
type EnvLayer struct {
	Passthrough []string          `yaml:"passthrough,omitempty"`
	Set         map[string]string `yaml:"set,omitempty"`
}

// NetworkLayer controls egress.
type NetworkLayer struct {
	Mode                     *NetMode          `yaml:"mode,omitempty"`
	Allow                    []string          `yaml:"allow,omitempty"`
	Deny                     []string          `yaml:"deny,omitempty"`
	Rules                    []string          `yaml:"rules,omitempty"`
	AllowPrivateDestinations *bool             `yaml:"allow_private_destinations,omitempty"`
	Hosts                    map[string]string `yaml:"hosts,omitempty"`
	OnUnavailable            *string           `yaml:"on_unavailable,omitempty"`
	OnUnknown                *string           `yaml:"on_unknown,omitempty"` // deny (default) or ask: prompt for hosts no entry decides
	Credentials              []Credential      `yaml:"credentials,omitempty"`
	// UpstreamRoots are PEM files of extra CA certificates the proxy
	// trusts when it connects upstream (a corporate TLS gateway, a local
	// test server), on top of the system roots.
	UpstreamRoots []string `yaml:"upstream_roots,omitempty"`
	// DNS are the resolvers (IP:port) the proxy asks instead of the
	// system's (split-horizon DNS; tests). Every answer is still checked.
	DNS []string `yaml:"dns,omitempty"`
}

// Credential is a secret from warden's secret store that the egress proxy
// attaches to requests to Host, after TLS interception. The sandbox only
// ever sees a placeholder (in the variable Env, when set); requests that
// carry the placeholder to any other host are refused.
type Credential struct {
	Host   string `yaml:"host" json:"host"`
	Header string `yaml:"header,omitempty" json:"header,omitempty"` // default Authorization (Bearer)
	Secret string `yaml:"secret,omitempty" json:"secret,omitempty"` // name in scope "net": warden secret set net NAME
	// FromEnv takes the secret from this variable of warden's own
	// environment instead of the secret store (exactly one of the two).
	FromEnv string `yaml:"from_env,omitempty" json:"from_env,omitempty"`
	Env     string `yaml:"env,omitempty" json:"env,omitempty"`     // variable holding the placeholder in the sandbox
	Basic   bool   `yaml:"basic,omitempty" json:"basic,omitempty"` // Authorization: Basic base64(secret)
}

// LimitsLayer holds process resource limits. Zero means unlimited.
type LimitsLayer struct {
	Processes  *int64    `yaml:"processes,omitempty"`
	OpenFiles  *int64    `yaml:"open_files,omitempty"`
	Memory     *ByteSize `yaml:"memory,omitempty"`
	CPUSeconds *int64    `yaml:"cpu_seconds,omitempty"`
	FileSize   *ByteSize `yaml:"file_size,omitempty"`
}

// ToolsLayer holds harness tool-call rules.
type ToolsLayer struct {
	Deny []string `yaml:"deny,omitempty"`
}

// ByteSize is a size in bytes written as an integer or with a unit suffix
// (K, M, G, T, optionally followed by "iB" or "B"; all binary multiples).
type ByteSize int64

// UnmarshalYAML parses "512M", "2GiB" or "1048576", reporting the line.
func (b *ByteSize) UnmarshalYAML(node *yaml.Node) error {
	n, err := ParseByteSize(node.Value)
	if err != nil || node.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: invalid size %q (want bytes or a number with K, M, G or T)", node.Line, node.Value)
	}
	*b = ByteSize(n)
	return nil
}

// MarshalText renders the size in bytes.
func (b ByteSize) MarshalText() ([]byte, error) {
	return []byte(strconv.FormatInt(int64(b), 10)), nil
}

// ParseByteSize parses a size with an optional binary unit suffix.
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := int64(1)
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(u, "IB")
	u = strings.TrimSuffix(u, "B")
	if u != "" {
		switch u[len(u)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			u = u[:len(u)-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(u), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return n * mult, nil
}

// Spec is the merged, unresolved policy: paths are still as written (with ~
// and $VAR), and Sources records which layers set each field.
type Spec struct {
	Profile        string
	Mode           Mode
	Backend        Backend
	Landlock       LayerMode
	StartInScratch bool
	ReadPaths      []string
	WritePaths     []string
	StatePaths     []string
	WriteFiles     []string
	DenyPaths      []string
	AllowHidden    []string
	Env            EnvSpec
	Network        NetworkSpec
	Limits         Limits
	Skills         []string
	ToolsDeny      []string
	UnixSockets    []string

	// Sources maps a dotted field name to the layers that set it, in order.
	Sources map[string][]string
}

// EnvSpec is the merged environment policy.
type EnvSpec struct {
	Passthrough []string
	Set         map[string]string
}

// NetworkSpec is the merged network policy.
type NetworkSpec struct {
	Mode          NetMode
	Allow         []string
	Deny          []string
	Rules         []string
	AllowPrivate  bool
	Hosts         map[string]string
	OnUnavailable string
	OnUnknown     string // "deny" or "ask"
	Credentials   []Credential
	UpstreamRoots []string
	DNS           []string
}

// Limits are process resource limits; zero means not limited.
type Limits struct {
	Processes  int64
	OpenFiles  int64
	Memory     int64
	CPUSeconds int64
	FileSize   int64
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }
