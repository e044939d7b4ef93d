package prompt

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/egress"
)

type fakeAsker struct {
	a     Answer
	err   error
	calls atomic.Int32
}

func (f *fakeAsker) Ask(context.Context, string, int) (Answer, error) {
	f.calls.Add(1)
	return f.a, f.err
}

func TestPrompter(t *testing.T) {
	t.Parallel()
	const scope = "/src/app"
	seed := []Entry{
		{Host: "learned-allow.test", Port: 443, Decision: Allow, Scope: scope, Time: t0},
		{Host: "learned-deny.test", Decision: Deny, Scope: ScopeGlobal, Time: t0},
		{Host: "elsewhere.test", Port: 443, Decision: Allow, Scope: "/src/other", Time: t0},
	}
	now := time.Date(2025, 7, 1, 9, 30, 15, 500, time.UTC)
	tests := []struct {
		name      string
		host      string
		port      int
		asker     *fakeAsker
		noAsker   bool
		want      egress.Decision
		wantAsked bool
		stored    *Entry // the entry remembered for host, if any
	}{
		{"learned allow", "learned-allow.test", 443, &fakeAsker{a: AnswerNever}, false, egress.DecisionAllow, false, nil},
		{"learned allow other port", "learned-allow.test", 80, &fakeAsker{a: AnswerDeny}, false, egress.DecisionDeny, true, nil},
		{"learned deny", "learned-deny.test", 8080, &fakeAsker{a: AnswerOnce}, false, egress.DecisionDeny, false, nil},
		{"other project asks", "elsewhere.test", 443, &fakeAsker{a: AnswerOnce}, false, egress.DecisionAllow, true, nil},
		{"once", "new.test", 443, &fakeAsker{a: AnswerOnce}, false, egress.DecisionAllow, true, nil},
		{"always", "new.test", 443, &fakeAsker{a: AnswerAlways}, false, egress.DecisionAllow, true, &Entry{Host: "new.test", Port: 443, Decision: Allow, Scope: scope, Time: now.Truncate(time.Second)}},
		{"deny", "new.test", 443, &fakeAsker{a: AnswerDeny}, false, egress.DecisionDeny, true, nil},
		{"never", "new.test", 443, &fakeAsker{a: AnswerNever}, false, egress.DecisionDeny, true, &Entry{Host: "new.test", Port: 443, Decision: Deny, Scope: scope, Time: now.Truncate(time.Second)}},
		{"asker error", "new.test", 443, &fakeAsker{a: AnswerAlways, err: errors.New("broken")}, false, egress.DecisionDeny, true, nil},
		{"timeout", "new.test", 443, &fakeAsker{err: ErrTimeout}, false, egress.DecisionDeny, true, nil},
		{"no asker", "new.test", 443, nil, true, egress.DecisionDeny, false, nil},
		{"non-canonical host", "NEW.test", 443, &fakeAsker{a: AnswerAlways}, false, egress.DecisionDeny, false, nil},
		{"bad port", "new.test", 0, &fakeAsker{a: AnswerAlways}, false, egress.DecisionDeny, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "learned-network.yaml")
			l, err := OpenLearned(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range seed {
				if err := l.Remember(e); err != nil {
					t.Fatal(err)
				}
			}
			cfg := Config{Learned: l, Scope: scope, Now: func() time.Time { return now }}
			if !tc.noAsker {
				cfg.Asker = tc.asker
			}
			if got := New(cfg).Ask(t.Context(), tc.host, tc.port); got != tc.want {
				t.Errorf("decision %v, want %v", got, tc.want)
			}
			if tc.asker != nil {
				if asked := tc.asker.calls.Load() > 0; asked != tc.wantAsked {
					t.Errorf("asked = %v, want %v", asked, tc.wantAsked)
				}
			}
			es, err := l.Entries()
			if err != nil {
				t.Fatal(err)
			}
			var got *Entry
			for _, e := range es {
				if e.Host == tc.host {
					got = &e
				}
			}
			if tc.stored == nil && len(es) != len(seed) {
				t.Errorf("stored something: %+v", es)
			}
			if tc.stored != nil {
				if diff := cmp.Diff(tc.stored, got); diff != "" {
					t.Errorf("stored (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestPrompterWithoutStore(t *testing.T) {
	t.Parallel()
	p := New(Config{Asker: &fakeAsker{a: AnswerAlways}})
	if got := p.Ask(t.Context(), "a.test", 443); got != egress.DecisionAllow {
		t.Errorf("decision %v", got)
	}
}

func TestChoose(t *testing.T) {
	t.Parallel()
	tty := func(err error) func() (io.ReadWriteCloser, error) {
		return func() (io.ReadWriteCloser, error) {
			if err != nil {
				return nil, err
			}
			return nopTTY{}, nil
		}
	}
	tests := []struct {
		name   string
		env    map[string]string
		tools  []string
		ttyErr error
		want   string
	}{
		{"dialog", x11, []string{"zenity"}, nil, "dialog"},
		{"terminal without display", nil, []string{"zenity"}, nil, "terminal"},
		{"terminal without tool", x11, nil, nil, "terminal"},
		{"none", nil, nil, errors.New("no tty"), "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, _ := fakeDialog("linux", tc.env, tc.tools, 0, "", nil)
			a := Choose(ChooseOptions{Dialog: d, OpenTTY: tty(tc.ttyErr), Timeout: time.Second})
			got := "none"
			switch a := a.(type) {
			case *Dialog:
				got = "dialog"
				if a.Timeout != time.Second {
					t.Errorf("dialog timeout %v", a.Timeout)
				}
			case *Terminal:
				got = "terminal"
				if a.Timeout != time.Second {
					t.Errorf("terminal timeout %v", a.Timeout)
				}
			case nil:
			default:
				t.Fatalf("unexpected asker %T", a)
			}
			if got != tc.want {
				t.Errorf("Choose = %s, want %s", got, tc.want)
			}
		})
	}
}

type nopTTY struct{}

func (nopTTY) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopTTY) Write(p []byte) (int, error) { return len(p), nil }
func (nopTTY) Close() error                { return nil }

// TestPrompterSite: "site" remembers the registrable domain with its
// subdomains, so a sibling host is allowed without asking again.
func TestPrompterSite(t *testing.T) {
	t.Parallel()
	l, err := OpenLearned(filepath.Join(t.TempDir(), "learned-network.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asker := &fakeAsker{a: AnswerSite}
	p := New(Config{Learned: l, Asker: asker, Scope: "/src/app"})
	if got := p.Ask(t.Context(), "api.example.com", 443); got != egress.DecisionAllow {
		t.Fatalf("decision %v", got)
	}
	es, _ := l.Entries()
	if len(es) != 1 || es[0].Target() != "*.example.com:443" || es[0].Decision != Allow {
		t.Fatalf("stored %+v", es)
	}
	if got := p.Ask(t.Context(), "www.example.com", 443); got != egress.DecisionAllow || asker.calls.Load() != 1 {
		t.Errorf("sibling: %v after %d asks", got, asker.calls.Load())
	}
	ip := &fakeAsker{a: AnswerSite}
	if got := New(Config{Learned: l, Asker: ip}).Ask(t.Context(), "192.0.2.9", 443); got != egress.DecisionDeny {
		t.Errorf("a site answer for an IP allowed it: %v", got)
	}
}
