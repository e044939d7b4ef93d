package harness

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means the rule parses
		tool    string
		pattern string
		hasArg  bool
	}{
		{name: "bare tool", in: "Bash", tool: "Bash"},
		{name: "bare tool trimmed", in: "  WebFetch \t", tool: "WebFetch"},
		{name: "bash pattern", in: "Bash(git push*)", tool: "Bash", pattern: "git push*", hasArg: true},
		{name: "path pattern", in: "Write(/etc/*)", tool: "Write", pattern: "/etc/*", hasArg: true},
		{name: "pattern keeps inner parens", in: "Bash(echo (a))", tool: "Bash", pattern: "echo (a)", hasArg: true},
		{name: "pattern star only", in: "Read(*)", tool: "Read", pattern: "*", hasArg: true},
		{name: "unknown tool name", in: "mcp__github__create_issue", tool: "mcp__github__create_issue"},
		{name: "empty", in: "", wantErr: "bad tool name"},
		{name: "blank", in: "   ", wantErr: "bad tool name"},
		{name: "unclosed paren", in: "Bash(", wantErr: "want Tool or Tool(pattern)"},
		{name: "unclosed pattern", in: "Bash(git push", wantErr: "want Tool or Tool(pattern)"},
		{name: "space in tool", in: "Ba sh", wantErr: "bad tool name"},
		{name: "empty pattern", in: "Bash()", wantErr: "empty pattern"},
		{name: "blank pattern", in: "Bash(  )", wantErr: "empty pattern"},
		{name: "star tool", in: "*", wantErr: "bad tool name"},
		{name: "star in tool", in: "Ba*(x)", wantErr: "bad tool name"},
		{name: "no tool before paren", in: "(git push)", wantErr: "bad tool name"},
		{name: "stray close paren", in: "Bash)", wantErr: "bad tool name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(tc.in)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseRule(%q) = %+v, want error containing %q", tc.in, r, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseRule(%q) error = %q, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tc.in, err)
			}
			if r.tool != tc.tool || r.pattern != tc.pattern || r.hasArg != tc.hasArg {
				t.Errorf("ParseRule(%q) = {tool %q pattern %q hasArg %v}, want {tool %q pattern %q hasArg %v}",
					tc.in, r.tool, r.pattern, r.hasArg, tc.tool, tc.pattern, tc.hasArg)
			}
			if r.String() != strings.TrimSpace(tc.in) {
				t.Errorf("String() = %q, want %q", r.String(), strings.TrimSpace(tc.in))
			}
		})
	}
}

func TestParseRules(t *testing.T) {
	t.Parallel()
	t.Run("all good", func(t *testing.T) {
		t.Parallel()
		rs, err := ParseRules([]string{"Bash(git push*)", "WebFetch"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rs {
			got = append(got, r.String())
		}
		if diff := cmp.Diff([]string{"Bash(git push*)", "WebFetch"}, got); diff != "" {
			t.Errorf("rules (-want +got):\n%s", diff)
		}
	})
	t.Run("empty list", func(t *testing.T) {
		t.Parallel()
		rs, err := ParseRules(nil)
		if err != nil || len(rs) != 0 {
			t.Errorf("ParseRules(nil) = %v, %v; want no rules, no error", rs, err)
		}
	})
	t.Run("reports every bad entry", func(t *testing.T) {
		t.Parallel()
		rs, err := ParseRules([]string{"Bash", "Bash(", "Write()", "*"})
		if err == nil {
			t.Fatalf("ParseRules = %v, want error", rs)
		}
		if rs != nil {
			t.Errorf("rules = %v, want nil on error", rs)
		}
		for _, want := range []string{`"Bash("`, `"Write()"`, `"*"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
	})
}

func TestRuleMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rule string
		call Call
		want bool
	}{
		// Tool names.
		{name: "bare rule matches any arg", rule: "Bash", call: Call{Tool: ToolBash, Arg: "ls"}, want: true},
		{name: "bare rule matches no arg", rule: "WebFetch", call: Call{Tool: ToolFetch}, want: true},
		{name: "tool lower case rule", rule: "bash(git push*)", call: Call{Tool: ToolBash, Arg: "git push"}, want: true},
		{name: "tool upper case rule", rule: "BASH", call: Call{Tool: ToolBash, Arg: "ls"}, want: true},
		{name: "other tool", rule: "Bash", call: Call{Tool: ToolRead, Arg: "/etc/passwd"}, want: false},
		{name: "tool prefix is not a match", rule: "Bas", call: Call{Tool: ToolBash, Arg: "ls"}, want: false},

		// Glob.
		{name: "star spans slashes", rule: "Write(/etc/*)", call: Call{Tool: ToolWrite, Arg: "/etc/ssh/sshd_config"}, want: true},
		{name: "star spans spaces", rule: "Bash(rm *)", call: Call{Tool: ToolBash, Arg: "rm -rf / --no-preserve-root"}, want: true},
		{name: "star matches empty", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "git push"}, want: true},
		{name: "inner star", rule: "Bash(git * --force)", call: Call{Tool: ToolBash, Arg: "git push origin main --force"}, want: true},
		{name: "pattern is anchored at start", rule: "Write(/etc/*)", call: Call{Tool: ToolWrite, Arg: "/home/u/etc/x"}, want: false},
		{name: "pattern is anchored at end", rule: "Bash(git push)", call: Call{Tool: ToolBash, Arg: "git push origin"}, want: false},
		{name: "question mark one char", rule: "Read(/tmp/?.txt)", call: Call{Tool: ToolRead, Arg: "/tmp/a.txt"}, want: true},
		{name: "question mark not zero chars", rule: "Read(/tmp/?.txt)", call: Call{Tool: ToolRead, Arg: "/tmp/.txt"}, want: false},
		{name: "question mark not two chars", rule: "Read(/tmp/?.txt)", call: Call{Tool: ToolRead, Arg: "/tmp/ab.txt"}, want: false},
		{name: "pattern case sensitive", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "GIT PUSH"}, want: false},
		{name: "star with no arg", rule: "Read(*)", call: Call{Tool: ToolRead}, want: true},
		{name: "pattern with no arg", rule: "Read(/etc/*)", call: Call{Tool: ToolRead}, want: false},
		{name: "backtracking star", rule: "Bash(*push*force)", call: Call{Tool: ToolBash, Arg: "push x force y push --force"}, want: true},

		// Compound shell commands: each simple command is tried.
		{name: "and list", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "make && git push"}, want: true},
		{name: "or list", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "false || git push"}, want: true},
		{name: "semicolon", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "echo a; git push -f"}, want: true},
		{name: "semicolon no space", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "echo a;git push"}, want: true},
		{name: "background", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "sleep 1 & git push"}, want: true},
		{name: "assignment prefix", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "FOO=1 git push"}, want: true},
		{name: "several assignments", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "A=1 B= GIT_TRACE=1 git push"}, want: true},
		{name: "env wrapper", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "env git push"}, want: true},
		{name: "env with assignment", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "env GIT_DIR=.git git push"}, want: true},
		{name: "command exec sudo nohup time", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "time nohup sudo exec command git push"}, want: true},
		{name: "subshell", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "(git push)"}, want: true},
		{name: "command substitution", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "echo $(git push)"}, want: true},
		{name: "bare command substitution", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "$(git push)"}, want: true},
		{name: "assigned substitution", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "x=$(git push)"}, want: true},
		{name: "backticks", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "echo `git push`"}, want: true},
		{name: "process substitution", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "cat <(git push)"}, want: true},
		{name: "newline", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "cd repo\ngit push"}, want: true},
		{name: "pipe", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "yes | git push"}, want: true},
		{name: "pipe both", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "git push 2>&1 | tee log"}, want: true},
		{name: "extra whitespace", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "  git \t push"}, want: true},
		{name: "quoted words", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: `"git" 'push'`}, want: true},
		{name: "plain other command", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "git status"}, want: false},
		{name: "compound without match", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "git fetch && git status; echo push"}, want: false},
		// Erring on the side of denial: any word that starts "git push"
		// is caught, even as data (matching shell exactly is a losing
		// game; a guard rail that errs must err towards refusing).
		{name: "git push as argument", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "grep git push.log"}, want: true},
		{name: "quoted semicolon", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: `echo "a; git push"`}, want: true},
		{name: "single quoted and", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: `echo 'a && git push'`}, want: true},
		{name: "not a word start", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: "echo legit push"}, want: false},
		// The whole command is still tried, so a pattern written for it
		// matches across quoted operators.
		{name: "whole command with quotes", rule: `Bash(echo "a; git push")`, call: Call{Tool: ToolBash, Arg: `echo "a; git push"`}, want: true},
		// Erring on the side of denial: an escaped operator still splits.
		{name: "escaped semicolon splits", rule: "Bash(git push*)", call: Call{Tool: ToolBash, Arg: `echo a\;git push`}, want: true},

		// Non-Bash tools match the whole argument only.
		{name: "write not split at semicolon", rule: "Write(/etc/*)", call: Call{Tool: ToolWrite, Arg: "/tmp/a;/etc/passwd"}, want: false},
		{name: "read not split at and", rule: "Read(/etc/*)", call: Call{Tool: ToolRead, Arg: "x && /etc/shadow"}, want: false},
		{name: "fetch not split at pipe", rule: "WebFetch(https://evil.example/*)", call: Call{Tool: ToolFetch, Arg: "https://ok.example/|https://evil.example/x"}, want: false},
		{name: "fetch whole url", rule: "WebFetch(https://evil.example/*)", call: Call{Tool: ToolFetch, Arg: "https://evil.example/x?y=1"}, want: true},
		{name: "unknown tool with name only", rule: "mcp__gh__merge", call: Call{Tool: "mcp__gh__merge"}, want: true},
		{name: "unknown tool case insensitive", rule: "MCP__GH__MERGE", call: Call{Tool: "mcp__gh__merge"}, want: true},
		{name: "unknown tool pattern never matches", rule: "mcp__gh__merge(main)", call: Call{Tool: "mcp__gh__merge"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Match(tc.call); got != tc.want {
				t.Errorf("%s.Match(%s) = %v, want %v", tc.rule, tc.call, got, tc.want)
			}
		})
	}
}

// TestRuleMatchShellForms: shell forms a segment splitter missed (found
// by review); the word-start matcher must catch each.
func TestRuleMatchShellForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  string
		bug  string // what a segment splitter got wrong
	}{
		{
			name: "command substitution in double quotes",
			cmd:  `echo "$(git push)"`,
			bug:  "shellSegments treats double-quoted text as inert, but $( ) inside double quotes runs: the segment stays `echo $(git push)`",
		},
		{
			name: "backticks in double quotes",
			cmd:  "echo \"`git push`\"",
			bug:  "backticks inside double quotes run a command, but the quote state hides them",
		},
		{
			name: "escaped quote outside quotes",
			cmd:  `echo \'; git push`,
			bug:  "a backslash outside quotes is not an escape to shellSegments, so \\' opens a quote that swallows `; git push` (sh runs echo ' then git push)",
		},
		{
			name: "escaped double quote outside quotes",
			cmd:  `echo it\"s; git push`,
			bug:  "same as above with \\\"",
		},
		{
			name: "then keyword",
			cmd:  "if true; then git push; fi",
			bug:  "trimSegment does not drop shell reserved words, leaving `then git push`",
		},
		{
			name: "do keyword",
			cmd:  "for r in origin; do git push $r; done",
			bug:  "reserved word `do` is left in front of the command",
		},
		{
			name: "brace group",
			cmd:  "{ git push; }",
			bug:  "`{` is neither a separator nor dropped",
		},
		{
			name: "negation",
			cmd:  "! git push",
			bug:  "`!` is not dropped",
		},
		{
			name: "quoted assignment with space",
			cmd:  `MSG="a b" git push`,
			bug:  "trimSegment splits with strings.Fields after the quotes were kept, so `MSG=\"a` is dropped but `b\"` is taken as the command",
		},
	}
	r, err := ParseRule("Bash(git push*)")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !r.Match(Call{Tool: ToolBash, Arg: tc.cmd}) {
				t.Errorf("Bash(git push*) does not match %q (%s)", tc.cmd, tc.bug)
			}
		})
	}
}

// TestRuleMatchWrappers: wrappers around the command (a nested shell,
// options of env and sudo, xargs) do not hide it.
func TestRuleMatchWrappers(t *testing.T) {
	t.Parallel()
	r, err := ParseRule("Bash(git push*)")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"bash -c 'git push'", // a nested shell is one simple command
		"env -i git push",    // wrapper options are not skipped
		"sudo -u dev git push",
		"xargs git push < /dev/null",
	} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			if !r.Match(Call{Tool: ToolBash, Arg: cmd}) {
				t.Errorf("Bash(git push*) does not match %q", cmd)
			}
		})
	}
}

func TestDeny(t *testing.T) {
	t.Parallel()
	rules, err := ParseRules([]string{"Write(/etc/*)", "Bash(git push*)", "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		call     Call
		wantRule string // "" means allowed
	}{
		{name: "first matching rule wins", call: Call{Tool: ToolBash, Arg: "git push"}, wantRule: "Bash(git push*)"},
		{name: "falls through to bare rule", call: Call{Tool: ToolBash, Arg: "ls"}, wantRule: "Bash"},
		{name: "path rule", call: Call{Tool: ToolWrite, Arg: "/etc/hosts"}, wantRule: "Write(/etc/*)"},
		{name: "allowed", call: Call{Tool: ToolWrite, Arg: "/tmp/x"}},
		{name: "allowed other tool", call: Call{Tool: ToolRead, Arg: "/etc/hosts"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, denied := Deny(rules, tc.call)
			if denied != (tc.wantRule != "") || r.String() != tc.wantRule {
				t.Errorf("Deny(%s) = %q, %v; want %q", tc.call, r, denied, tc.wantRule)
			}
		})
	}
	t.Run("no rules", func(t *testing.T) {
		t.Parallel()
		if r, denied := Deny(nil, Call{Tool: ToolBash, Arg: "git push"}); denied {
			t.Errorf("Deny(nil) = %q, true", r)
		}
	})
}

func TestCallString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    Call
		want string
	}{
		{c: Call{Tool: ToolBash, Arg: "ls"}, want: "Bash(ls)"},
		{c: Call{Tool: "mcp__x"}, want: "mcp__x"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			if got := tc.c.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// decode turns a JSON object as a harness sends it into the map the hook
// passes to CanonicalCall.
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test input %s: %v", s, err)
	}
	return m
}

func TestCanonicalCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tool  string
		input string // JSON
		want  Call
	}{
		// Claude Code.
		{name: "claude Bash", tool: "Bash", input: `{"command":"git push","description":"push"}`, want: Call{ToolBash, "git push"}},
		{name: "claude Read", tool: "Read", input: `{"file_path":"/etc/passwd"}`, want: Call{ToolRead, "/etc/passwd"}},
		{name: "claude Write", tool: "Write", input: `{"file_path":"/etc/hosts","content":"x"}`, want: Call{ToolWrite, "/etc/hosts"}},
		{name: "claude Edit", tool: "Edit", input: `{"file_path":"/a.go","old_string":"a","new_string":"b"}`, want: Call{ToolEdit, "/a.go"}},
		{name: "claude MultiEdit", tool: "MultiEdit", input: `{"file_path":"/a.go","edits":[]}`, want: Call{ToolEdit, "/a.go"}},
		{name: "claude NotebookEdit", tool: "NotebookEdit", input: `{"notebook_path":"/n.ipynb","new_source":"x"}`, want: Call{ToolEdit, ""}},
		{name: "claude WebFetch", tool: "WebFetch", input: `{"url":"https://example.com/","prompt":"summarise"}`, want: Call{ToolFetch, "https://example.com/"}},
		{name: "fetch falls back to prompt", tool: "WebFetch", input: `{"prompt":"read https://x.example"}`, want: Call{ToolFetch, "read https://x.example"}},

		// Codex.
		{name: "codex exec_command", tool: "exec_command", input: `{"cmd":"git push","workdir":"/w"}`, want: Call{ToolBash, "git push"}},
		{name: "codex shell argv -lc", tool: "shell", input: `{"command":["bash","-lc","git push"],"workdir":"/w"}`, want: Call{ToolBash, "git push"}},
		{name: "codex shell argv -c", tool: "shell", input: `{"command":["/bin/sh","-c","make && git push"]}`, want: Call{ToolBash, "make && git push"}},
		{name: "codex shell plain argv", tool: "shell", input: `{"command":["git","push","origin"]}`, want: Call{ToolBash, "git push origin"}},
		{name: "codex shell argv drops non-strings", tool: "shell", input: `{"command":["git",1,"push"]}`, want: Call{ToolBash, "git push"}},
		{name: "codex shell_command", tool: "shell_command", input: `{"command":"git push"}`, want: Call{ToolBash, "git push"}},
		{name: "codex local_shell", tool: "local_shell", input: `{"command":["bash","-lc","ls"]}`, want: Call{ToolBash, "ls"}},
		{name: "codex apply_patch", tool: "apply_patch", input: `{"input":"*** Begin Patch"}`, want: Call{ToolEdit, ""}},

		// Gemini CLI.
		{name: "gemini run_shell_command", tool: "run_shell_command", input: `{"command":"git push","description":"d"}`, want: Call{ToolBash, "git push"}},
		{name: "gemini read_file", tool: "read_file", input: `{"absolute_path":"/etc/passwd"}`, want: Call{ToolRead, "/etc/passwd"}},
		{name: "gemini read_many_files", tool: "read_many_files", input: `{"paths":["a","b"]}`, want: Call{ToolRead, ""}},
		{name: "gemini write_file", tool: "write_file", input: `{"file_path":"/etc/hosts","content":"x"}`, want: Call{ToolWrite, "/etc/hosts"}},
		{name: "gemini replace", tool: "replace", input: `{"file_path":"/a.go","old_string":"a","new_string":"b"}`, want: Call{ToolEdit, "/a.go"}},
		{name: "gemini web_fetch", tool: "web_fetch", input: `{"prompt":"get https://x.example"}`, want: Call{ToolFetch, "get https://x.example"}},

		// OpenCode.
		{name: "opencode bash", tool: "bash", input: `{"command":"git push","description":"d"}`, want: Call{ToolBash, "git push"}},
		{name: "opencode read", tool: "read", input: `{"filePath":"/etc/passwd"}`, want: Call{ToolRead, "/etc/passwd"}},
		{name: "opencode write", tool: "write", input: `{"filePath":"/etc/hosts","content":"x"}`, want: Call{ToolWrite, "/etc/hosts"}},
		{name: "opencode edit", tool: "edit", input: `{"filePath":"/a.go","oldString":"a","newString":"b"}`, want: Call{ToolEdit, "/a.go"}},
		{name: "opencode multiedit", tool: "multiedit", input: `{"filePath":"/a.go","edits":[]}`, want: Call{ToolEdit, "/a.go"}},
		{name: "opencode patch", tool: "patch", input: `{"patchText":"..."}`, want: Call{ToolEdit, ""}},
		{name: "opencode webfetch", tool: "webfetch", input: `{"url":"https://x.example","format":"text"}`, want: Call{ToolFetch, "https://x.example"}},
		{name: "opencode fetch", tool: "fetch", input: `{"url":"https://x.example"}`, want: Call{ToolFetch, "https://x.example"}},

		// Key preference and odd inputs.
		{name: "command preferred over cmd", tool: "Bash", input: `{"command":"ls","cmd":"git push"}`, want: Call{ToolBash, "ls"}},
		{name: "empty command falls back to cmd", tool: "Bash", input: `{"command":"","cmd":"git push"}`, want: Call{ToolBash, "git push"}},
		{name: "file_path preferred", tool: "Write", input: `{"path":"/b","file_path":"/a"}`, want: Call{ToolWrite, "/a"}},
		{name: "non-string arg ignored", tool: "Bash", input: `{"command":42}`, want: Call{ToolBash, ""}},
		{name: "nil input", tool: "Bash", want: Call{ToolBash, ""}},
		{name: "tool name case folded", tool: "RUN_SHELL_COMMAND", input: `{"command":"x"}`, want: Call{ToolBash, "x"}},

		// Unknown tools keep their name and have no argument.
		{name: "unknown tool", tool: "mcp__github__merge_pr", input: `{"pr":1,"command":"git push"}`, want: Call{Tool: "mcp__github__merge_pr"}},
		{name: "unknown tool keeps case", tool: "Glob", input: `{"pattern":"**"}`, want: Call{Tool: "Glob"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := CanonicalCall(tc.tool, decode(t, tc.input)); got != tc.want {
				t.Errorf("CanonicalCall(%q, %s) = %#v, want %#v", tc.tool, tc.input, got, tc.want)
			}
		})
	}
}

// TestCanonicalCallCoversAliases makes sure every alias maps somewhere
// that has argument keys, so a pattern rule can match it.
func TestCanonicalCallCoversAliases(t *testing.T) {
	t.Parallel()
	for alias, canon := range toolAliases {
		t.Run(alias, func(t *testing.T) {
			t.Parallel()
			if _, ok := argKeys[canon]; !ok {
				t.Errorf("alias %q maps to %q, which has no argKeys", alias, canon)
			}
			if got := CanonicalCall(alias, nil); got.Tool != canon {
				t.Errorf("CanonicalCall(%q).Tool = %q, want %q", alias, got.Tool, canon)
			}
			if got := CanonicalCall(strings.ToUpper(alias), nil); got.Tool != canon {
				t.Errorf("CanonicalCall(%q).Tool = %q, want %q", strings.ToUpper(alias), got.Tool, canon)
			}
		})
	}
}

// TestRulesAcrossHarnesses: one rule denies the same action whatever the
// harness calls its tool.
func TestRulesAcrossHarnesses(t *testing.T) {
	t.Parallel()
	rules, err := ParseRules([]string{"Bash(git push*)", "Write(/etc/*)", "mcp__gh__merge"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		tool  string
		input string
		want  string
	}{
		{name: "claude bash", tool: "Bash", input: `{"command":"make && git push"}`, want: "Bash(git push*)"},
		{name: "codex exec", tool: "exec_command", input: `{"cmd":"git push -f"}`, want: "Bash(git push*)"},
		{name: "codex shell", tool: "shell", input: `{"command":["bash","-lc","FOO=1 git push"]}`, want: "Bash(git push*)"},
		{name: "gemini shell", tool: "run_shell_command", input: `{"command":"git push"}`, want: "Bash(git push*)"},
		{name: "opencode bash", tool: "bash", input: `{"command":"git push origin"}`, want: "Bash(git push*)"},
		{name: "claude write", tool: "Write", input: `{"file_path":"/etc/hosts"}`, want: "Write(/etc/*)"},
		{name: "gemini write", tool: "write_file", input: `{"file_path":"/etc/hosts"}`, want: "Write(/etc/*)"},
		{name: "opencode write", tool: "write", input: `{"filePath":"/etc/hosts"}`, want: "Write(/etc/*)"},
		{name: "unknown tool bare rule", tool: "mcp__gh__merge", input: `{"n":1}`, want: "mcp__gh__merge"},
		{name: "allowed write", tool: "write", input: `{"filePath":"/tmp/x"}`},
		{name: "allowed bash", tool: "bash", input: `{"command":"git status"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := CanonicalCall(tc.tool, decode(t, tc.input))
			r, denied := Deny(rules, c)
			if denied != (tc.want != "") || r.String() != tc.want {
				t.Errorf("Deny(%s) = %q, %v; want %q", c, r, denied, tc.want)
			}
		})
	}
}
