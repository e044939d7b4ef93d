package skills

import (
	"errors"
	"fmt"
	"strings"
)

// ParseError is a SKILL.md or manifest error with a position.
type ParseError struct {
	File  string
	Line  int    // 1-based; 0 when unknown
	Field string // dotted field path, e.g. "sidecar.secrets[0].name"; may be empty
	Msg   string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("skills: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ParseErrors is every error found in one file, in file order.
type ParseErrors []*ParseError

func (es ParseErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap lets errors.As find the individual errors.
func (es ParseErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

var (
	// ErrNotRegistered means no skill of that name is registered.
	ErrNotRegistered = errors.New("skills: skill is not registered")
	// ErrNotApproved means the skill is registered but its bundle has not
	// been approved.
	ErrNotApproved = errors.New("skills: skill bundle is not approved")
	// ErrNoManifest means the directory holds neither omac.yaml nor
	// warden.yaml.
	ErrNoManifest = errors.New("skills: no omac.yaml or warden.yaml")
	// ErrSpecialFile means a skill tree holds a device, socket or FIFO.
	ErrSpecialFile = errors.New("skills: special file in skill tree")
)

// DriftError means a skill's source tree no longer matches the approved
// bundle. The skill must be re-approved before it runs again.
type DriftError struct {
	Name     string
	Approved string // approved bundle hash
	Current  string // hash of the source tree now; "" if it could not be read
	Reason   string // set when Current is ""
}

func (e *DriftError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("skills: %s changed since it was approved (%s): re-approve it with `warden skill approve %s`", e.Name, e.Reason, e.Name)
	}
	return fmt.Sprintf("skills: %s changed since it was approved (approved %s, now %s): review and re-approve it with `warden skill approve %s`",
		e.Name, e.Approved, e.Current, e.Name)
}

// ConfigError is a config value that does not satisfy its manifest field.
type ConfigError struct {
	Skill string
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("skills: %s: config %s: %s", e.Skill, e.Field, e.Msg)
}
