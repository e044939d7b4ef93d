package policy

import (
	"fmt"
	"strings"
)

// ParseError is a policy file error with a position.
type ParseError struct {
	File string
	Line int // 1-based; 0 when unknown
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ParseErrors is a list of parse errors from one file.
type ParseErrors []*ParseError

func (es ParseErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// ValidationError names a policy field whose value cannot be honoured.
type ValidationError struct {
	Field  string // dotted field path, e.g. "network.mode"
	Source string // the layer that set it
	Msg    string
}

func (e *ValidationError) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("policy: %s (set by %s): %s", e.Field, e.Source, e.Msg)
	}
	return fmt.Sprintf("policy: %s: %s", e.Field, e.Msg)
}

// DenyKind classifies a denial.
type DenyKind int

// Denial kinds.
const (
	DenyRead DenyKind = iota + 1
	DenyWrite
	DenyNetwork
	DenyEnv
)

func (k DenyKind) String() string {
	switch k {
	case DenyRead:
		return "read"
	case DenyWrite:
		return "write"
	case DenyNetwork:
		return "network"
	case DenyEnv:
		return "env"
	}
	return "unknown"
}

// DenyError is a denial as a value: the proxy, the audit log and the CLI all
// render from its fields.
type DenyError struct {
	Kind    DenyKind
	Subject string // the path, host or variable
	Rule    string // the rule that denied it
}

func (e *DenyError) Error() string {
	return fmt.Sprintf("policy: %s of %q denied by %s", e.Kind, e.Subject, e.Rule)
}
