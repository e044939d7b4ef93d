package skills

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// SkillFile is the file that makes a directory a skill.
const SkillFile = "SKILL.md"

// Limits from the agentskills.io specification.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
)

var nameRE = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// Frontmatter is the YAML header of SKILL.md (agentskills.io).
type Frontmatter struct {
	Name          string            `yaml:"name" json:"name"`
	Description   string            `yaml:"description" json:"description"`
	License       string            `yaml:"license,omitempty" json:"license,omitempty"`
	Compatibility string            `yaml:"compatibility,omitempty" json:"compatibility,omitempty"`
	Metadata      map[string]string `yaml:"metadata,omitempty" json:"metadata,omitempty"`
	// AllowedTools is informational; warden does not enforce it. It is
	// written as a YAML list or as one space- or comma-separated string.
	AllowedTools ToolList `yaml:"allowed-tools,omitempty" json:"allowed_tools,omitempty"`
}

// ToolList is a list of tool patterns such as "Read" or "Bash(git:*)".
type ToolList []string

// UnmarshalYAML accepts a sequence of strings or one string separated by
// spaces or commas (outside parentheses).
func (t *ToolList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*t = splitTools(n.Value)
		return nil
	case yaml.SequenceNode:
		out := make(ToolList, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: allowed-tools entries must be strings", c.Line)
			}
			out = append(out, c.Value)
		}
		*t = out
		return nil
	default:
		return fmt.Errorf("line %d: allowed-tools must be a string or a list of strings", n.Line)
	}
}

func splitTools(s string) ToolList {
	var out ToolList
	depth, start := 0, -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, s[start:end])
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n'):
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(s))
	return out
}

// ValidName reports whether s is a valid skill name: 1 to 64 lowercase
// letters, digits and hyphens, with no leading, trailing or double hyphen.
func ValidName(s string) bool {
	return len(s) >= 1 && len(s) <= MaxNameLen && nameRE.MatchString(s)
}

// SplitFrontmatter splits SKILL.md into its YAML header and body. The file
// must start with a "---" line; the header ends at the next "---" line.
// headerLine is the 1-based file line of the header's first line.
func SplitFrontmatter(data []byte) (header, body []byte, headerLine int, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // BOM
	first, rest, found := cutLine(data)
	if !found || strings.TrimRight(string(first), " \t\r") != "---" {
		return nil, nil, 0, false
	}
	off := len(data) - len(rest)
	for len(rest) > 0 {
		line, next, _ := cutLine(rest)
		if t := strings.TrimRight(string(line), " \t\r"); t == "---" || t == "..." {
			end := len(data) - len(rest)
			return data[off:end], next, 2, true
		}
		rest = next
	}
	return nil, nil, 0, false
}

func cutLine(b []byte) (line, rest []byte, found bool) {
	return bytes.Cut(b, []byte{'\n'})
}

// ParseFrontmatter decodes and validates the frontmatter of SKILL.md. file
// names the file in errors. If dirName is not empty the name must equal it.
// Unknown keys are errors.
func ParseFrontmatter(file string, data []byte, dirName string) (*Frontmatter, error) {
	header, _, off, ok := SplitFrontmatter(data)
	if !ok {
		return nil, &ParseError{File: file, Line: 1, Msg: "missing YAML frontmatter: the file must start with a --- line and the header must end with another"}
	}
	var fm Frontmatter
	doc, err := decodeStrict(file, header, off-1, &fm)
	if err != nil {
		return nil, err
	}
	var errs ParseErrors
	add := func(field, msg string) {
		errs = append(errs, &ParseError{File: file, Line: lineOf(doc, field) + off - 1, Field: field, Msg: msg})
	}
	switch {
	case fm.Name == "":
		add("name", "required")
	case !ValidName(fm.Name):
		add("name", fmt.Sprintf("invalid name %q: use 1 to %d lowercase letters, digits and single hyphens, not at either end", fm.Name, MaxNameLen))
	case dirName != "" && fm.Name != dirName:
		add("name", fmt.Sprintf("name %q must equal the directory name %q", fm.Name, dirName))
	}
	switch n := utf8.RuneCountInString(fm.Description); {
	case strings.TrimSpace(fm.Description) == "":
		add("description", "required")
	case n > MaxDescriptionLen:
		add("description", fmt.Sprintf("%d characters, more than %d", n, MaxDescriptionLen))
	}
	if n := utf8.RuneCountInString(fm.Compatibility); n > MaxCompatibilityLen {
		add("compatibility", fmt.Sprintf("%d characters, more than %d", n, MaxCompatibilityLen))
	}
	for k := range fm.Metadata {
		if strings.TrimSpace(k) == "" {
			add("metadata", "empty key")
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &fm, nil
}
