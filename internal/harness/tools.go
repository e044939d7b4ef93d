package harness

import (
	"fmt"
	"strings"
)

// Canonical tool names. Each harness's own names are mapped onto these so
// one tools.deny rule applies to every harness.
const (
	ToolBash  = "Bash"
	ToolRead  = "Read"
	ToolWrite = "Write"
	ToolEdit  = "Edit"
	ToolFetch = "WebFetch"
)

// Call is one tool call in canonical form: the tool and the argument a
// rule's pattern is matched against (the shell command, the file path or
// the URL).
type Call struct {
	Tool string
	Arg  string
}

func (c Call) String() string {
	if c.Arg == "" {
		return c.Tool
	}
	return c.Tool + "(" + c.Arg + ")"
}

// toolAliases maps harness tool names (lower-cased) to canonical ones.
var toolAliases = map[string]string{
	// Claude Code and Codex hooks.
	"bash": ToolBash, "read": ToolRead, "write": ToolWrite, "edit": ToolEdit, "multiedit": ToolEdit,
	"webfetch": ToolFetch, "notebookedit": ToolEdit,
	// Codex function names.
	"exec_command": ToolBash, "shell": ToolBash, "shell_command": ToolBash, "local_shell": ToolBash,
	"apply_patch": ToolEdit,
	// Gemini CLI.
	"run_shell_command": ToolBash, "read_file": ToolRead, "read_many_files": ToolRead,
	"write_file": ToolWrite, "replace": ToolEdit, "web_fetch": ToolFetch,
	// OpenCode.
	"patch": ToolEdit, "fetch": ToolFetch,
}

// argKeys are the input keys that hold a tool's argument, in preference
// order, per canonical tool.
var argKeys = map[string][]string{
	ToolBash:  {"command", "cmd"},
	ToolRead:  {"file_path", "filePath", "absolute_path", "path"},
	ToolWrite: {"file_path", "filePath", "path"},
	ToolEdit:  {"file_path", "filePath", "path"},
	ToolFetch: {"url", "prompt"},
}

// CanonicalCall maps a harness's tool name and input onto a Call. Tools
// warden does not know keep their own name and have no argument, so a rule
// naming them exactly still matches.
func CanonicalCall(tool string, input map[string]any) Call {
	name, ok := toolAliases[strings.ToLower(tool)]
	if !ok {
		return Call{Tool: tool}
	}
	c := Call{Tool: name}
	for _, k := range argKeys[name] {
		switch v := input[k].(type) {
		case string:
			c.Arg = v
		case []any: // Codex "shell": argv
			parts := make([]string, 0, len(v))
			for _, p := range v {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				}
			}
			c.Arg = unwrapShell(parts)
		}
		if c.Arg != "" {
			break
		}
	}
	return c
}

// unwrapShell turns ["bash","-lc","git push"] into "git push".
func unwrapShell(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// Rule is one parsed tools.deny entry: `Tool` or `Tool(pattern)`, where
// pattern is a glob over the argument in which * also matches / and spaces.
type Rule struct {
	raw     string
	tool    string
	pattern string
	hasArg  bool
}

func (r Rule) String() string { return r.raw }

// ParseRule parses a tools.deny entry.
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	r := Rule{raw: s, tool: s}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return Rule{}, fmt.Errorf("tools.deny %q: want Tool or Tool(pattern)", s)
		}
		r.tool, r.pattern, r.hasArg = s[:i], s[i+1:len(s)-1], true
	}
	if r.tool == "" || strings.ContainsAny(r.tool, " ()*") {
		return Rule{}, fmt.Errorf("tools.deny %q: bad tool name", s)
	}
	if r.hasArg && strings.TrimSpace(r.pattern) == "" {
		return Rule{}, fmt.Errorf("tools.deny %q: empty pattern (write %s to deny every call)", s, r.tool)
	}
	return r, nil
}

// ParseRules parses every entry, reporting all bad ones.
func ParseRules(entries []string) ([]Rule, error) {
	out := make([]Rule, 0, len(entries))
	var bad []string
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		out = append(out, r)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return out, nil
}

// Match reports whether the rule denies c. For Bash, the pattern is tried
// against the whole command and against every suffix of it that starts a
// word (after a space, an operator, a quote, a bracket, $( or a backtick),
// so `Bash(git push*)` also catches `make && git push`, `FOO=1 git push`,
// `echo "$(git push)"`, `if x; then git push; fi` and `bash -c 'git push'`.
// Parsing shell exactly is a losing game; this errs towards denying (a
// quoted "a; git push" is refused too). It is a guard rail for the
// harness, not the security boundary: the sandbox is.
func (r Rule) Match(c Call) bool {
	if !strings.EqualFold(r.tool, c.Tool) {
		return false
	}
	if !r.hasArg {
		return true
	}
	if globMatch(r.pattern, c.Arg) {
		return true
	}
	if c.Tool != ToolBash {
		return false
	}
	// The raw command, and the same with quotes and backslashes removed and
	// blanks collapsed (so "git" 'push' and git \t push are seen too).
	for _, cmd := range []string{c.Arg, unquote(c.Arg)} {
		for i := range len(cmd) {
			if (i == 0 || wordBreak(cmd[i-1])) && !wordBreak(cmd[i]) && globMatch(r.pattern, cmd[i:]) {
				return true
			}
		}
	}
	return false
}

var unquoter = strings.NewReplacer(`"`, "", `'`, "", `\`, "")

func unquote(s string) string {
	return strings.Join(strings.Fields(unquoter.Replace(s)), " ")
}

// wordBreak reports whether b can end the word before a command name.
func wordBreak(b byte) bool {
	return strings.IndexByte(" \t\n\r;&|()`$\"'{}!<>\\=", b) >= 0
}

// globMatch matches s against a pattern in which * matches any run of
// characters (including / and spaces) and ? any one character.
func globMatch(pattern, s string) bool {
	// Iterative wildcard matching with backtracking on the last star.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Deny returns the first rule that denies c.
func Deny(rules []Rule, c Call) (Rule, bool) {
	for _, r := range rules {
		if r.Match(c) {
			return r, true
		}
	}
	return Rule{}, false
}
