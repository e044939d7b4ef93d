package secrets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/secrets"
)

const raw = "hunter2-s3cr3t"

// leaks reports whether out contains the raw value in any common encoding.
func leaks(out string) bool {
	for _, enc := range []string{
		raw,
		fmt.Sprintf("%x", raw),
		fmt.Sprintf("%X", raw),
		fmt.Sprintf("%d", []byte(raw)),
		"aHVudGVyMi1zM2NyM3Q", // base64 prefix
	} {
		if strings.Contains(out, enc) {
			return true
		}
	}
	return false
}

func TestFormatRedacts(t *testing.T) {
	t.Parallel()
	s := secrets.NewString(raw)
	type exported struct{ Token secrets.Secret }
	type unexported struct{ token secrets.Secret }
	type pointer struct{ Token *secrets.Secret }
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v", "%10s", "%-10v", "% x"}
	values := map[string]any{
		"value":      s,
		"pointer":    &s,
		"exported":   exported{s},
		"unexported": unexported{s},
		"ptrfield":   pointer{&s},
		"slice":      []secrets.Secret{s},
		"map":        map[string]secrets.Secret{"k": s},
	}
	for name, v := range values {
		for _, verb := range verbs {
			out := fmt.Sprintf(verb, v)
			if leaks(out) {
				t.Errorf("%s %s leaked: %s", name, verb, out)
			}
		}
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		if got := fmt.Sprintf(verb, s); got != secrets.Redacted {
			t.Errorf("Sprintf(%q) = %q, want %q", verb, got, secrets.Redacted)
		}
	}
	if got := s.String(); got != secrets.Redacted {
		t.Errorf("String() = %q", got)
	}
	if got := fmt.Sprint(s); got != secrets.Redacted {
		t.Errorf("Sprint = %q", got)
	}
	err := fmt.Errorf("using %v: %w", s, errors.New("boom"))
	if leaks(err.Error()) {
		t.Errorf("error text leaked: %v", err)
	}
}

func TestSlogRedacts(t *testing.T) {
	t.Parallel()
	s := secrets.NewString(raw)
	type holder struct {
		Name  string
		Token secrets.Secret
	}
	for _, tc := range []struct {
		name string
		h    func(*bytes.Buffer) slog.Handler
	}{
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }},
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			l := slog.New(tc.h(&buf))
			l.Info("msg", "secret", s, "ptr", &s, "any", slog.AnyValue(s), "struct", holder{"n", s},
				slog.Group("g", "inner", s))
			l.With("with", s).Info("again")
			out := buf.String()
			if leaks(out) {
				t.Fatalf("slog leaked: %s", out)
			}
			if !strings.Contains(out, secrets.Redacted) {
				t.Fatalf("slog output lacks %q: %s", secrets.Redacted, out)
			}
		})
	}
}

func TestJSONRedacts(t *testing.T) {
	t.Parallel()
	s := secrets.NewString(raw)
	b, err := json.Marshal(map[string]any{"a": s, "b": &s, "c": struct{ T secrets.Secret }{s}})
	if err != nil {
		t.Fatal(err)
	}
	if leaks(string(b)) {
		t.Fatalf("json leaked: %s", b)
	}
	want := `{"a":"REDACTED","b":"REDACTED","c":{"T":"REDACTED"}}`
	if string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	txt, err := s.MarshalText()
	if err != nil || string(txt) != secrets.Redacted {
		t.Fatalf("MarshalText = %q, %v", txt, err)
	}
}

func TestRevealFingerprintZero(t *testing.T) {
	t.Parallel()
	s := secrets.New([]byte(raw))
	if got := s.RevealString(); got != raw {
		t.Fatalf("RevealString = %q", got)
	}
	r := s.Reveal()
	r[0] = 'X' // a revealed copy must not alias the secret
	if got := s.RevealString(); got != raw {
		t.Fatalf("Reveal aliased the secret: %q", got)
	}
	// printf 'hunter2-s3cr3t' | sha256sum | cut -c1-12
	if got, want := s.Fingerprint(), "c084de87db5b"; got != want {
		t.Fatalf("Fingerprint = %q, want %q", got, want)
	}
	if !s.Equal(secrets.NewString(raw)) || s.Equal(secrets.NewString("other")) {
		t.Fatal("Equal is wrong")
	}
	cp := s
	s.Zero()
	if !s.IsZero() || !cp.IsZero() || cp.Len() != 0 {
		t.Fatalf("Zero did not wipe: %d %d", s.Len(), cp.Len())
	}
	var zero secrets.Secret
	if zero.Reveal() != nil || zero.RevealString() != "" || !zero.IsZero() {
		t.Fatal("zero value is not empty")
	}
	zero.Zero()
}

func TestServiceForSkill(t *testing.T) {
	t.Parallel()
	if got := secrets.ServiceForSkill("echo"); got != "warden/echo" {
		t.Fatalf("ServiceForSkill = %q", got)
	}
}
