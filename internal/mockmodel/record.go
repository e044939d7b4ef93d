package mockmodel

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// redacted replaces secret values in the log.
const redacted = "REDACTED"

// Credential names in Request.Credentials: header and parameter names,
// not credentials.
const (
	CredAPIKey        = "x-api-key"      // Anthropic
	CredAuthorization = "authorization"  // OpenAI-style Bearer
	CredGoogAPIKey    = "x-goog-api-key" //nolint:gosec // G101: Gemini's header name, not a credential
	CredQueryKey      = "key"            // Google "?key=" query parameter
)

// Request is one logged request. Its JSON form is one line of Options.Log;
// field names are stable.
type Request struct {
	Seq    uint64    `json:"seq"` // arrival order, from 1
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Query  string    `json:"query,omitempty"` // with the "key" parameter redacted
	// API is the wire protocol family: "anthropic", "openai" or "gemini";
	// empty for plumbing such as HEAD /.
	API string `json:"api,omitempty"`
	// Headers are the request headers, multiple values joined with ", ";
	// credentials and other secret-looking headers read "REDACTED".
	Headers map[string]string `json:"headers,omitempty"`
	// Credentials holds, for each credential the request presented (the
	// Cred* names), the SHA-256 of its value, never the value.
	Credentials map[string]Credential `json:"credentials,omitempty"`

	Model  string `json:"model,omitempty"`
	Stream bool   `json:"stream,omitempty"`
	// ShellTool is the name of the shell tool the request offered, if any.
	ShellTool string `json:"shell_tool,omitempty"`
	// ToolResults are the texts of the tool results in the conversation.
	ToolResults []string `json:"tool_results,omitempty"`
	// Turn is what the reply did: "tool_call", "final" or "side".
	Turn string `json:"turn,omitempty"`
	// Command is the command the reply asked the harness to run.
	Command string `json:"command,omitempty"`

	Status    int    `json:"status"`
	Error     string `json:"error,omitempty"`
	BodyBytes int    `json:"body_bytes"`
	// Body is the request body, only with Options.RecordBodies.
	Body string `json:"body,omitempty"`
}

// Credential describes a presented credential without holding it.
type Credential struct {
	// Scheme is the Authorization scheme, such as "Bearer"; empty for the
	// other credentials.
	Scheme string `json:"scheme,omitempty"`
	// SHA256 is KeyHash of the value (for Authorization, of the part after
	// the scheme).
	SHA256 string `json:"sha256"`
}

// KeyHash is the lower-case hex SHA-256 of key, as recorded in
// Credential.SHA256.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// clone returns a deep copy, so callers of Requests cannot change the log.
func (r Request) clone() Request {
	r.Headers = maps.Clone(r.Headers)
	r.Credentials = maps.Clone(r.Credentials)
	r.ToolResults = slices.Clone(r.ToolResults)
	return r
}

// rawCred is a credential in the clear: only compared and hashed, never
// stored.
type rawCred struct {
	scheme, value string
}

// presented are the credentials a request carries, by Cred* name.
type presented map[string]rawCred

// credentials collects the request's credentials. For Authorization the
// scheme ("Bearer") is split from the value.
func credentials(r *http.Request) presented {
	p := presented{}
	for _, name := range []string{CredAPIKey, CredGoogAPIKey} {
		if vs := r.Header.Values(name); len(vs) > 0 {
			p[name] = rawCred{value: vs[0]}
		}
	}
	if vs := r.Header.Values("Authorization"); len(vs) > 0 {
		scheme, value, ok := strings.Cut(strings.TrimSpace(vs[0]), " ")
		if !ok {
			scheme, value = "", scheme
		}
		p[CredAuthorization] = rawCred{scheme: scheme, value: strings.TrimSpace(value)}
	}
	if q := r.URL.Query(); q.Has(CredQueryKey) {
		p[CredQueryKey] = rawCred{value: q.Get(CredQueryKey)}
	}
	return p
}

// hashed is the loggable form: each value replaced by its hash.
func (p presented) hashed() map[string]Credential {
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]Credential, len(p))
	for name, c := range p {
		out[name] = Credential{Scheme: c.scheme, SHA256: KeyHash(c.value)}
	}
	return out
}

// has reports whether any credential equals key: x-api-key,
// x-goog-api-key, the "key" query parameter, or a Bearer token.
func (p presented) has(key string) bool {
	for name, c := range p {
		if name == CredAuthorization && !strings.EqualFold(c.scheme, "Bearer") {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(c.value), []byte(key)) == 1 {
			return true
		}
	}
	return false
}

// secretName reports whether a header's or query parameter's value must
// not be logged.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"auth", "key", "token", "secret", "cookie", "password", "credential", "signature"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// scrubber masks one known secret (Options.RequireKey) in recorded text.
type scrubber string

func (s scrubber) scrub(text string) string {
	if s == "" {
		return text
	}
	return strings.ReplaceAll(text, string(s), "["+redacted+"]")
}

func (s scrubber) scrubAll(texts []string) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = s.scrub(t)
	}
	return out
}

// headers returns the loggable headers.
func (s scrubber) headers(h http.Header) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for name, vs := range h {
		v := strings.Join(vs, ", ")
		if secretName(name) {
			v = redacted
		}
		out[strings.ToLower(name)] = s.scrub(v)
	}
	return out
}

// query returns the loggable query string, with secret-looking
// parameters such as "key" redacted.
func (s scrubber) query(u *url.URL) string {
	if u.RawQuery == "" {
		return ""
	}
	q := u.Query()
	for name := range q {
		if secretName(name) {
			q[name] = []string{redacted}
		}
	}
	return s.scrub(q.Encode())
}
