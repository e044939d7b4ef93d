package secrets

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
)

// Redacted is what a Secret prints as.
const Redacted = "REDACTED"

// Secret holds a secret value. The zero value is an empty secret. Copies
// share the underlying bytes, so [Secret.Zero] on one wipes them all.
//
// The bytes sit behind a pointer so that even reflection-based printing of
// a struct that holds a Secret in an unexported field (where fmt cannot call
// Format) shows an address, never the value.
type Secret struct {
	v *value
}

// value adds a second indirection: fmt prints a pointer to a struct as
// &{...} at the top level (as in "%!s(*secrets.value=&{...})"), but any
// deeper pointer only as an address.
type value struct{ b *[]byte }

func (s Secret) bytes() []byte {
	if s.v == nil || s.v.b == nil {
		return nil
	}
	return *s.v.b
}

// New returns a Secret holding a copy of b.
func New(b []byte) Secret {
	if len(b) == 0 {
		return Secret{}
	}
	c := append([]byte(nil), b...)
	return Secret{v: &value{b: &c}}
}

// NewString returns a Secret holding s.
func NewString(s string) Secret {
	if s == "" {
		return Secret{}
	}
	b := []byte(s)
	return Secret{v: &value{b: &b}}
}

// Reveal returns a copy of the raw value. The caller owns the copy and should
// clear it when done.
func (s Secret) Reveal() []byte {
	b := s.bytes()
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// RevealString returns the raw value as a string.
func (s Secret) RevealString() string { return string(s.bytes()) }

// Len reports the length of the value in bytes.
func (s Secret) Len() int { return len(s.bytes()) }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return len(s.bytes()) == 0 }

// Equal reports whether s and o hold the same value, in constant time for
// values of equal length.
func (s Secret) Equal(o Secret) bool {
	return subtle.ConstantTimeCompare(s.bytes(), o.bytes()) == 1
}

// Fingerprint returns the first 12 hex digits of the SHA-256 of the value: a
// short identifier that is safe to show and log.
func (s Secret) Fingerprint() string {
	sum := sha256.Sum256(s.bytes())
	return hex.EncodeToString(sum[:])[:12]
}

// Zero overwrites the value with zeros and empties s. Every copy of s shares
// the wiped bytes.
func (s *Secret) Zero() {
	if s.v != nil && s.v.b != nil {
		clear(*s.v.b)
		*s.v.b = nil
	}
	s.v = nil
}

// Format implements fmt.Formatter: every verb and flag prints "REDACTED".
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// String implements fmt.Stringer.
func (Secret) String() string { return Redacted }

// GoString implements fmt.GoStringer.
func (Secret) GoString() string { return Redacted }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalText implements encoding.TextMarshaler.
func (Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// MarshalJSON implements json.Marshaler.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }
