package egress

import (
	"bufio"
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadSOCKSRequest(t *testing.T) {
	t.Parallel()
	type res struct {
		Host string
		Port int
		Rep  int // -1: success, -2: I/O error
	}
	tests := []struct {
		name string
		in   []byte
		want res
	}{
		{"domain", socksDomainReq("Example.COM.", 443), res{"example.com", 443, -1}},
		{"ipv4", []byte{5, 1, 0, 1, 1, 2, 3, 4, 0, 80}, res{"1.2.3.4", 80, -1}},
		{"ipv6", []byte{5, 1, 0, 4, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0}, res{"2001:db8::1", 256, -1}},
		{"ipv4-mapped", []byte{5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1, 0, 80}, res{"127.0.0.1", 80, -1}},
		{"domain is legacy ip", socksDomainReq("0x7f.1", 80), res{"127.0.0.1", 80, -1}},
		{"nul", socksDomainReq("a.com\x00.b.com", 443), res{"", 0, socksRepRuleset}},
		{"empty domain", socksDomainReq("", 443), res{"", 0, socksRepRuleset}},
		{"port 0", socksDomainReq("a.com", 0), res{"", 0, socksRepRuleset}},
		{"bind", []byte{5, 2, 0, 1, 1, 2, 3, 4, 0, 80}, res{"", 0, socksRepCmdUnsup}},
		{"bad version", []byte{4, 1, 0, 1, 1, 2, 3, 4, 0, 80}, res{"", 0, socksRepFail}},
		{"bad rsv", []byte{5, 1, 1, 1, 1, 2, 3, 4, 0, 80}, res{"", 0, socksRepFail}},
		{"bad atyp", []byte{5, 1, 0, 2, 1, 2, 3, 4, 0, 80}, res{"", 0, socksRepATYP}},
		{"short", []byte{5, 1, 0, 3, 10, 'a'}, res{"", 0, -2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, p, err := readSOCKSRequest(bufio.NewReader(bytes.NewReader(tt.in)))
			got := res{h, p, -1}
			if err != nil {
				got.Rep = -2
				if se, ok := errors.AsType[*socksError](err); ok {
					got.Rep = int(se.rep)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzSOCKSRequest(f *testing.F) {
	f.Add(socksDomainReq("example.com", 443))
	f.Add(socksDomainReq("a\x00b.com", 443))
	f.Add([]byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add([]byte{5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1, 0, 80})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := readSOCKSRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			return
		}
		if p < 1 || p > 65535 {
			t.Fatalf("port %d", p)
		}
		checkNormalized(t, string(b), h)
	})
}
