package skills_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/skills"
)

func TestParseFrontmatter(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name string
		dir  string
		in   string
		want string // substring of the error, "" for success
		line int    // line of the first error
	}{
		{name: "minimal", in: "---\nname: pdf\ndescription: Read PDFs.\n---\nbody\n"},
		{name: "all-fields", in: "---\nname: pdf-tools\ndescription: d\nlicense: MIT\ncompatibility: any\nmetadata:\n  a: b\n  v: 1.0\nallowed-tools: [Read, Bash]\n---\n"},
		{name: "dir-matches", dir: "pdf", in: "---\nname: pdf\ndescription: d\n---\n"},
		{name: "crlf", in: "---\r\nname: pdf\r\ndescription: d\r\n---\r\nbody"},
		{name: "bom", in: "\xef\xbb\xbf---\nname: pdf\ndescription: d\n---\n"},
		{name: "no-frontmatter", in: "# pdf\n", want: "missing YAML frontmatter", line: 1},
		{name: "unterminated", in: "---\nname: pdf\ndescription: d\n", want: "missing YAML frontmatter", line: 1},
		{name: "empty", in: "---\n---\n", want: "empty document", line: 2},
		{name: "not-a-map", in: "---\n- a\n---\n", want: "top level must be a mapping", line: 2},
		{name: "unknown-key", in: "---\nname: pdf\ndescription: d\nversion: 2\n---\n", want: "field version not found", line: 4},
		{name: "duplicate-key", in: "---\nname: pdf\nname: pdf\ndescription: d\n---\n", want: "already defined", line: 3},
		{name: "bad-yaml", in: "---\nname: [pdf\ndescription: d\n---\n", want: "", line: -1},
		{name: "name-missing", in: "---\ndescription: d\n---\n", want: "name: required"},
		{name: "name-upper", in: "---\nname: PDF\ndescription: d\n---\n", want: "invalid name", line: 2},
		{name: "name-leading-hyphen", in: "---\nname: -pdf\ndescription: d\n---\n", want: "invalid name", line: 2},
		{name: "name-trailing-hyphen", in: "---\nname: pdf-\ndescription: d\n---\n", want: "invalid name", line: 2},
		{name: "name-double-hyphen", in: "---\nname: pdf--x\ndescription: d\n---\n", want: "invalid name", line: 2},
		{name: "name-underscore", in: "---\nname: pdf_x\ndescription: d\n---\n", want: "invalid name", line: 2},
		{name: "name-65", in: "---\nname: " + long(65) + "\ndescription: d\n---\n", want: "invalid name", line: 2},
		{name: "name-64", in: "---\nname: " + long(64) + "\ndescription: d\n---\n"},
		{name: "name-not-dir", dir: "other", in: "---\nname: pdf\ndescription: d\n---\n", want: "must equal the directory name", line: 2},
		{name: "description-missing", in: "---\nname: pdf\n---\n", want: "description: required"},
		{name: "description-blank", in: "---\nname: pdf\ndescription: \"  \"\n---\n", want: "description: required", line: 3},
		{name: "description-1024", in: "---\nname: pdf\ndescription: " + long(1024) + "\n---\n"},
		{name: "description-1025", in: "---\nname: pdf\ndescription: " + long(1025) + "\n---\n", want: "more than 1024", line: 3},
		{name: "compatibility-501", in: "---\nname: pdf\ndescription: d\ncompatibility: " + long(501) + "\n---\n", want: "more than 500", line: 4},
		{name: "metadata-not-strings", in: "---\nname: pdf\ndescription: d\nmetadata:\n  a: [1]\n---\n", want: "cannot unmarshal", line: 5},
		{name: "name-wrong-type", in: "---\nname: {a: b}\ndescription: d\n---\n", want: "cannot unmarshal", line: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := skills.ParseFrontmatter("SKILL.md", []byte(tc.in), tc.dir)
			if tc.want == "" && tc.line == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			pe, ok := errors.AsType[*skills.ParseError](err)
			if !ok {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if tc.line > 0 && pe.Line != tc.line {
				t.Fatalf("line = %d, want %d (%v)", pe.Line, tc.line, err)
			}
			if tc.line < 0 && pe.Line <= 0 {
				t.Fatalf("no line number in %v", err)
			}
		})
	}
}

func TestFrontmatterFields(t *testing.T) {
	t.Parallel()
	in := "---\nname: pdf\ndescription: Read PDFs.\nlicense: MIT\nmetadata:\n  v: 1.0\n  on: yes\nallowed-tools: Bash(git add:*) Read, Grep\n---\n# body\n"
	fm, err := skills.ParseFrontmatter("SKILL.md", []byte(in), "pdf")
	if err != nil {
		t.Fatal(err)
	}
	want := &skills.Frontmatter{
		Name: "pdf", Description: "Read PDFs.", License: "MIT",
		Metadata:     map[string]string{"v": "1.0", "on": "yes"},
		AllowedTools: skills.ToolList{"Bash(git add:*)", "Read", "Grep"},
	}
	if diff := cmp.Diff(want, fm); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	_, body, line, ok := skills.SplitFrontmatter([]byte(in))
	if !ok || string(body) != "# body\n" || line != 2 {
		t.Fatalf("SplitFrontmatter body %q line %d ok %v", body, line, ok)
	}
}
