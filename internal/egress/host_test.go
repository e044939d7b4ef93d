package egress

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizeHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string // want "" means an error
	}{
		{"example.com", "example.com"},
		{"EXAMPLE.com", "example.com"},
		{"a.com.", "a.com"},
		{"a.com..", ""},
		{".a.com", ""},
		{"bücher.de", "xn--bcher-kva.de"},
		{"xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"ＡＢＣ.com", "abc.com"},
		{"а.com", "xn--80a.com"}, // Cyrillic a: a different name, never "a.com"
		{"xn--zz.com", ""},
		{"a_b.com", ""},
		{"-a.com", ""},
		{"a-.com", ""},
		{"evil.com\x00.allowed.com", ""},
		{"evil.com\r\nx: y", ""},
		{"a b.com", ""},
		{"a\\b.com", ""},
		{"evil.com%00.allowed.com", ""},
		{"allowed.com@evil.com", ""},
		{"allowed.com/evil", ""},
		{"a.com:443", ""},
		{"", ""},
		{strings.Repeat("a", 64) + ".com", ""},
		{strings.Repeat("a.", 127) + "com", ""},
		// IP literals in every legacy form.
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0x7F.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0.0.0.0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"1.2.3.4.", "1.2.3.4"},
		{"１２７.０.０.１", "127.0.0.1"},
		{"[::1]", "::1"},
		{"::1", "::1"},
		{"[::]", "::"},
		{"[::ffff:127.0.0.1]", "127.0.0.1"},
		{"[::ffff:7f00:1]", "127.0.0.1"},
		{"[fe80::1%25eth0]", ""},
		{"[fe80::1%eth0]", ""},
		{"[1.2.3.4]", ""},
		{"[::1", ""},
		{"::1]", ""},
		// Numeric last label that inet_aton rejects: never a DNS name.
		{"1.2.3.4.5", ""},
		{"256.0.0.1", ""},
		{"08.0.0.1", ""},
		{"4294967296", ""},
		{"foo.123", ""},
		{"foo.0x1g", "foo.0x1g"}, // last label not numeric: a name
		{"123.foo", "123.foo"},
		{"0x7f.example.com", "0x7f.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeHost(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("NormalizeHost(%q) = %q, want error", tt.in, got)
				}
				if !errors.Is(err, ErrInvalidHost) {
					t.Fatalf("error %v does not wrap ErrInvalidHost", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NormalizeHost(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NormalizeHost(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseAuthority(t *testing.T) {
	t.Parallel()
	type res struct {
		Host string
		Port int
		OK   bool
	}
	tests := []struct {
		in   string
		def  int
		want res
	}{
		{"a.com:443", 0, res{"a.com", 443, true}},
		{"A.COM.:8080", 0, res{"a.com", 8080, true}},
		{"a.com", 0, res{}},
		{"a.com", 80, res{"a.com", 80, true}},
		{"a.com:", 80, res{}},
		{"a.com:0", 0, res{}},
		{"a.com:65536", 0, res{}},
		{"a.com:0443", 0, res{}},
		{"a.com:+443", 0, res{}},
		{"a.com:443:443", 0, res{}},
		{"[::1]:22", 0, res{"::1", 22, true}},
		{"[::1]", 443, res{"::1", 443, true}},
		{"[::1]x:1", 0, res{}},
		{"::1:22", 0, res{}},
		{"0x7f.1:80", 0, res{"127.0.0.1", 80, true}},
		{"allowed.com@evil.com:443", 0, res{}},
		{"evil.com\x00.allowed.com:443", 0, res{}},
		{"[::ffff:127.0.0.1]:80", 0, res{"127.0.0.1", 80, true}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			h, p, err := ParseAuthority(tt.in, tt.def)
			got := res{h, p, err == nil}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAuthority(%q) (-want +got):\n%s (err %v)", tt.in, diff, err)
			}
		})
	}
}

// checkNormalized holds for every accepted host.
func checkNormalized(t *testing.T, in, out string) {
	t.Helper()
	again, err := NormalizeHost(out)
	if err != nil || again != out {
		t.Fatalf("NormalizeHost(%q) = %q, not idempotent: %q %v", in, out, again, err)
	}
	for i := 0; i < len(out); i++ {
		c := out[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' && c != ':' {
			t.Fatalf("NormalizeHost(%q) = %q contains %q", in, out, c)
		}
	}
	if len(out) > maxHostLen {
		t.Fatalf("NormalizeHost(%q) = %q too long", in, out)
	}
	if _, addr, _ := parseHost(out); !addr.IsValid() {
		// A name must not be something inet_aton would read as an address.
		if _, ok := parseInetAton(out); ok {
			t.Fatalf("NormalizeHost(%q) = %q is a name inet_aton parses", in, out)
		}
	}
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"example.com", "0x7f.1", "[::ffff:127.0.0.1]", "bücher.de", "a.com.", "2130706433", "evil.com\x00.a.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := NormalizeHost(s)
		if err != nil {
			return
		}
		checkNormalized(t, s, out)
	})
}

func FuzzParseConnect(f *testing.F) {
	for _, s := range []string{"a.com:443", "[::1]:22", "a.com", "a.com:0443", "evil.com\x00.a.com:443", "x@y:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, p, err := ParseAuthority(s, 0)
		if err != nil {
			return
		}
		if p < 1 || p > 65535 {
			t.Fatalf("ParseAuthority(%q) port %d", s, p)
		}
		checkNormalized(t, s, h)
		// Round trip: the rendered authority parses to the same thing.
		h2, p2, err := ParseAuthority(hostPort(h, p), 0)
		if err != nil || h2 != h || p2 != p {
			t.Fatalf("round trip of %q: %q %d %v", s, h2, p2, err)
		}
	})
}
