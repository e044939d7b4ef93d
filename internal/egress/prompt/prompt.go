package prompt

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/wardenhq/warden/internal/egress"
)

// Config configures a Prompter.
type Config struct {
	// Learned holds remembered decisions; nil remembers nothing.
	Learned *Learned
	// Asker asks the user; nil denies every host not in Learned.
	Asker Asker
	// Scope is the session's project directory: remembered answers apply
	// to it, and lookups see its entries and global ones. "" or
	// ScopeGlobal remembers globally.
	Scope  string
	Logger *slog.Logger     // default: discard
	Now    func() time.Time // default time.Now
}

// Prompter answers egress.Config.Ask: a remembered decision first,
// otherwise the Asker; always and never answers are remembered. Use
// [Prompter.Ask] as egress.Config.Ask.
type Prompter struct {
	cfg Config
	log *slog.Logger
}

// New builds a Prompter.
func New(cfg Config) *Prompter {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Scope == "" {
		cfg.Scope = ScopeGlobal
	} else if cfg.Scope != ScopeGlobal {
		cfg.Scope = filepath.Clean(cfg.Scope)
	}
	return &Prompter{cfg: cfg, log: cfg.Logger}
}

// Ask decides host:port. It denies on every failure.
func (p *Prompter) Ask(ctx context.Context, host string, port int) egress.Decision {
	if err := checkHost(host); err != nil || port < 1 || port > 65535 {
		p.log.WarnContext(ctx, "refusing to ask about an invalid destination", "host", host, "port", port, "err", err)
		return egress.DecisionDeny
	}
	what := target(host, port)
	if l := p.cfg.Learned; l != nil {
		e, ok, err := l.Lookup(host, port, p.cfg.Scope)
		switch {
		case err != nil:
			// A broken file is not a remembered answer; the user is
			// asked (and remembering will fail loudly).
			p.log.WarnContext(ctx, "learned network decisions unreadable", "path", l.Path(), "err", err)
		case ok && e.Decision == Allow:
			p.log.InfoContext(ctx, "network access allowed by a learned decision", "target", what, "entry", e.Target(), "scope", e.Scope)
			return egress.DecisionAllow
		case ok:
			p.log.InfoContext(ctx, "network access denied by a learned decision", "target", what, "entry", e.Target(), "scope", e.Scope)
			return egress.DecisionDeny
		}
	}
	if p.cfg.Asker == nil {
		p.log.InfoContext(ctx, "network access denied: no way to ask", "target", what)
		return egress.DecisionDeny
	}
	a, err := p.cfg.Asker.Ask(ctx, host, port)
	if err != nil {
		if errors.Is(err, ErrTimeout) {
			p.log.InfoContext(ctx, "network prompt timed out; denied", "target", what)
		} else {
			p.log.WarnContext(ctx, "network prompt failed; denied", "target", what, "err", err)
		}
		return egress.DecisionDeny
	}
	p.log.InfoContext(ctx, "network prompt answered", "target", what, "answer", a.String())
	switch a {
	case AnswerAlways, AnswerNever, AnswerSite:
		d := Allow
		if a == AnswerNever {
			d = Deny
		}
		e := Entry{Host: host, Port: port, Decision: d, Scope: p.cfg.Scope, Time: p.cfg.Now().UTC().Truncate(time.Second)}
		if a == AnswerSite {
			site, ok := Site(host)
			if !ok {
				return egress.DecisionDeny // no site to remember; the asker offered none
			}
			e.Host, e.Subdomains = site, true
		}
		if l := p.cfg.Learned; l != nil {
			if err := l.Remember(e); err != nil {
				p.log.WarnContext(ctx, "could not remember the network decision", "target", what, "path", l.Path(), "err", err)
			}
		}
		if a != AnswerNever {
			return egress.DecisionAllow
		}
	case AnswerOnce:
		return egress.DecisionAllow
	case AnswerDeny:
	}
	return egress.DecisionDeny
}

// ChooseOptions are Choose's inputs; zero values use the real system.
type ChooseOptions struct {
	Dialog  *Dialog                            // default &Dialog{}
	OpenTTY func() (io.ReadWriteCloser, error) // default OpenTTY
	Timeout time.Duration                      // per prompt; default DefaultTimeout
	Logger  *slog.Logger                       // default: discard
}

// Choose picks the asker: a native dialog when one can be shown, else the
// terminal when the process has a controlling terminal, else nil (every
// host not remembered is denied), logging which and why.
func Choose(o ChooseOptions) Asker {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := o.Dialog
	if d == nil {
		d = &Dialog{}
	}
	if d.Timeout == 0 {
		d.Timeout = o.Timeout
	}
	tool, derr := d.Tool()
	if derr == nil {
		log.Info("network prompts use a dialog", "tool", tool)
		return d
	}
	open := o.OpenTTY
	if open == nil {
		open = OpenTTY
	}
	f, terr := open()
	if terr == nil {
		_ = f.Close()
		log.Info("network prompts use the terminal", "dialog", derr.Error())
		return &Terminal{Open: open, Timeout: o.Timeout}
	}
	log.Warn("network.on_unknown is ask, but there is no way to ask: unknown hosts are denied", "dialog", derr.Error(), "terminal", terr.Error())
	return nil
}
