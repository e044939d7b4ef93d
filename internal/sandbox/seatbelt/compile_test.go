package seatbelt

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/policy/policytest"
	"github.com/wardenhq/warden/internal/sandbox"
)

type goldenCase struct {
	yaml     string
	host     func() *policytest.Host
	filtered bool // resolve with the egress proxy available
}

// goldenCases are the policies every backend compiles (policytest.Cases),
// plus filtered networking, which only Seatbelt compiles so far.
func goldenCases() map[string]goldenCase {
	out := map[string]goldenCase{
		"net-filtered": {yaml: "version: 1\nnetwork: {mode: filtered}\n", host: policytest.Debian, filtered: true},
	}
	for name, c := range policytest.Cases() {
		out[name] = goldenCase{yaml: c.YAML, host: c.Host}
	}
	return out
}

func resolveCase(t *testing.T, tc goldenCase) *policy.Resolved {
	t.Helper()
	f, err := policy.Parse("test.yaml", []byte(tc.yaml))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := policy.Merge(policy.MergeInput{Sources: []policy.Source{{Name: "builtin", File: policy.Builtin()}, {Name: "test", File: f}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := policy.Resolve(spec, tc.host(), policy.ResolveOptions{NetworkFiltered: tc.filtered})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// testOptions are what a runner on a Mac would pass.
func testOptions() Options {
	return Options{
		ProxyPort:    3128,
		FacadeSocket: "/run/user/1000/warden/s-1/facade.sock",
		TmpDir:       "/private/var/folders/zz/abc/T/warden-s-1",
		TTY:          "/dev/ttys003",
	}
}

func compileCase(t *testing.T, res *policy.Resolved) *Profile {
	t.Helper()
	prof, err := Compile(&sandbox.Spec{Policy: res, Argv: []string{"true"}}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return prof
}

// render is the golden form: the profile text, then one KEY=VALUE per
// parameter.
func render(prof *Profile) string {
	var b strings.Builder
	b.WriteString(prof.Text)
	b.WriteString("\n;;;; ---- sandbox-exec -D parameters ----\n")
	for _, kv := range prof.Params {
		b.WriteString(kv.Key + "=" + kv.Value + "\n")
	}
	return b.String()
}

func TestCompileGolden(t *testing.T) {
	for name, tc := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			got := render(compileCase(t, resolveCase(t, tc)))
			golden := filepath.Join("testdata", name+".golden")
			policytest.Golden(t, golden, got)
		})
	}
}

// TestCompileDeterministic compiles each case twice.
func TestCompileDeterministic(t *testing.T) {
	for name, tc := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			a := render(compileCase(t, resolveCase(t, tc)))
			b := render(compileCase(t, resolveCase(t, tc)))
			if a != b {
				t.Error("two compilations differ")
			}
		})
	}
}

// TestCompileInvariants checks properties every compiled profile must
// have, whatever the policy.
func TestCompileInvariants(t *testing.T) {
	static := baseSBPL + tailSBPL + netOpenSBPL
	for name, tc := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			res := resolveCase(t, tc)
			prof := compileCase(t, res)
			text := prof.Text
			code := stripComments(text)

			if !strings.Contains(code, "(deny default") {
				t.Error("profile lacks (deny default)")
			}
			if err := balanced(text); err != nil {
				t.Error(err)
			}

			// Host paths travel only as parameters.
			params := map[string]string{}
			for _, kv := range prof.Params {
				if _, dup := params[kv.Key]; dup {
					t.Errorf("parameter %s defined twice", kv.Key)
				}
				params[kv.Key] = kv.Value
				readByTail := kv.Key == "HOME" && res.Mode != policy.ModeRWX
				if !readByTail && !strings.Contains(code, `(param "`+kv.Key+`")`) {
					t.Errorf("parameter %s=%s is never used", kv.Key, kv.Value)
				}
			}
			for _, m := range regexp.MustCompile(`\(param "([^"]*)"\)`).FindAllStringSubmatch(code, -1) {
				if _, ok := params[m[1]]; !ok {
					t.Errorf("profile reads undefined parameter %q", m[1])
				}
			}
			var hostPaths []string
			for _, l := range [][]policy.Grant{res.Read, res.Write, res.WriteFiles, res.Deny, res.Protect} {
				for _, g := range l {
					hostPaths = append(hostPaths, g.Path)
				}
			}
			for _, s := range res.Symlinks {
				hostPaths = append(hostPaths, s.Path)
			}
			hostPaths = append(hostPaths, res.Home, res.Workdir)
			hostPaths = append(hostPaths, res.Pin...)
			o := testOptions()
			hostPaths = append(hostPaths, o.FacadeSocket, o.TmpDir, o.TTY)
			for _, kv := range prof.Params {
				hostPaths = append(hostPaths, kv.Value)
			}
			for _, hp := range hostPaths {
				if hp == "/" || strings.Contains(static, hp) {
					continue // a fixed system path the static text names itself
				}
				if strings.Contains(text, hp) {
					t.Errorf("host path %s appears in the profile text", hp)
				}
			}
			if strings.Contains(text, "/home/dev") || strings.Contains(text, "warden-s-1") {
				t.Error("profile text contains a host path")
			}

			// Denies come after allows.
			lastAllow := strings.LastIndex(code, "(allow ")
			firstDeny := strings.Index(strings.Replace(code, "(deny default", "", 1), "(deny ")
			if firstDeny >= 0 && firstDeny < lastAllow {
				t.Errorf("a deny (offset %d) comes before an allow (offset %d)", firstDeny, lastAllow)
			}

			if res.Mode == policy.ModeRWX {
				if !strings.Contains(code, "(allow file*)") || strings.Count(code, "(deny ") != 1 {
					t.Error("rwx profile should allow file* and deny nothing but the default")
				}
				return
			}

			// Every grant has its allow.
			for _, g := range res.Read {
				if !hasFilter(text, prof, "(allow "+opsRead, g.Path) {
					t.Errorf("read grant %s has no allow", g.Path)
				}
			}
			for _, g := range append(slices.Clone(res.Write), res.WriteFiles...) {
				if !hasFilter(text, prof, "(allow "+opsWrite, g.Path) {
					t.Errorf("write grant %s has no allow", g.Path)
				}
			}

			// Every unreadable path is denied; every protected path is
			// write-denied; every directory above either, up to the
			// writable root (and so every pinned directory), has a rename
			// guard.
			guard := "(deny file-write-unlink file-write-create"
			for _, d := range res.Deny {
				if !hasFilter(text, prof, "(deny file-read* file-write*", d.Path) {
					t.Errorf("deny path %s is not denied", d.Path)
				}
				for a := d.Path; a != "/"; a = filepath.Dir(a) {
					if !hasFilter(text, prof, guard, a) {
						t.Errorf("ancestor %s of denied %s has no rename guard", a, d.Path)
					}
				}
			}
			for _, pr := range res.Protect {
				if !hasFilter(text, prof, "(deny file-write*", pr.Path) {
					t.Errorf("protected path %s is not write-denied", pr.Path)
				}
				root := ""
				for _, w := range res.Write {
					if under(pr.Path, w.Path) && len(w.Path) > len(root) {
						root = w.Path
					}
				}
				if root == "" {
					t.Errorf("protected path %s is in no writable root", pr.Path)
					continue
				}
				for a := pr.Path; ; a = filepath.Dir(a) {
					if !hasFilter(text, prof, guard, a) {
						t.Errorf("ancestor %s of protected %s has no rename guard", a, pr.Path)
					}
					if a == root || a == "/" {
						break
					}
				}
			}
			for _, pin := range res.Pin {
				if !hasFilter(text, prof, guard, pin) {
					t.Errorf("pinned directory %s has no rename guard", pin)
				}
			}
			if len(res.Write) > 0 && len(res.Protect) == 0 {
				t.Error("expected protected paths in this case")
			}
		})
	}
}

// hasFilter reports whether a rule starting with head names path through
// a parameter (subpath or literal).
func hasFilter(text string, prof *Profile, head, path string) bool {
	key := ""
	for _, kv := range prof.Params {
		if kv.Value == path && !slices.Contains([]string{"HOME", "TTY", "FACADE"}, kv.Key) {
			key = kv.Key
			break
		}
	}
	if key == "" {
		return false
	}
	for _, rule := range rules(text) {
		if !strings.HasPrefix(rule, head) {
			continue
		}
		if strings.Contains(rule, `(subpath (param "`+key+`"))`) || strings.Contains(rule, `(literal (param "`+key+`"))`) {
			return true
		}
	}
	return false
}

// rules splits profile text into its top-level forms.
func rules(text string) []string {
	code := stripComments(text)
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '"':
			i = skipString(code, i)
		case '(':
			if depth == 0 {
				start = i
			}
			depth++
		case ')':
			depth--
			if depth == 0 {
				out = append(out, code[start:i+1])
			}
		}
	}
	return out
}

// skipString returns the index of the quote closing the string opened at
// i. Inside #"..." (a regex literal) backslashes are not escapes.
func skipString(s string, i int) int {
	raw := i > 0 && s[i-1] == '#'
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && !raw:
			j++
		case s[j] == '"':
			return j
		}
	}
	return len(s)
}

// stripComments removes ; comments outside strings.
func stripComments(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '"':
			j := skipString(text, i)
			b.WriteString(text[i:min(j+1, len(text))])
			i = j
		case ';':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		default:
			b.WriteByte(text[i])
		}
	}
	return b.String()
}

type parenError struct{ msg string }

func (e *parenError) Error() string { return e.msg }

// balanced checks that parentheses outside strings and comments balance
// and that every string is closed.
func balanced(text string) error {
	code := stripComments(text)
	depth := 0
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '"':
			j := skipString(code, i)
			if j >= len(code) {
				return &parenError{"unterminated string"}
			}
			i = j
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return &parenError{"unbalanced ')'"}
			}
		}
	}
	if depth != 0 {
		return &parenError{"unbalanced '('"}
	}
	return nil
}

func TestCompileRejects(t *testing.T) {
	res := resolveCase(t, goldenCases()["default"])
	bad := *res
	bad.Read = append(slices.Clone(res.Read), policy.Grant{Path: "relative/dir", Dir: true})
	filtered := *res
	filtered.Network.Mode = policy.NetFiltered
	unknownMode := *res
	unknownMode.Mode = "weird"
	for name, tc := range map[string]struct {
		s   *sandbox.Spec
		opt Options
	}{
		"no policy":         {s: &sandbox.Spec{Argv: []string{"x"}}},
		"no spec":           {},
		"no command":        {s: &sandbox.Spec{Policy: res}},
		"relative grant":    {s: &sandbox.Spec{Policy: &bad, Argv: []string{"x"}}},
		"filtered no port":  {s: &sandbox.Spec{Policy: &filtered, Argv: []string{"x"}}},
		"filtered bad port": {s: &sandbox.Spec{Policy: &filtered, Argv: []string{"x"}}, opt: Options{ProxyPort: 70000}},
		"unknown mode":      {s: &sandbox.Spec{Policy: &unknownMode, Argv: []string{"x"}}},
		"relative tmpdir":   {s: &sandbox.Spec{Policy: res, Argv: []string{"x"}}, opt: Options{TmpDir: "tmp"}},
		"unclean facade":    {s: &sandbox.Spec{Policy: res, Argv: []string{"x"}}, opt: Options{FacadeSocket: "/run/../f.sock"}},
		"root tmpdir":       {s: &sandbox.Spec{Policy: res, Argv: []string{"x"}}, opt: Options{TmpDir: "/"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Compile(tc.s, tc.opt); err == nil {
				t.Fatal("Compile succeeded")
			}
		})
	}
}

// TestHostileNames: quotes, parentheses and newlines in host paths reach
// only the parameters.
func TestHostileNames(t *testing.T) {
	h := policytest.Debian()
	evil := "/home/dev/src/a\") (allow default) (\"\nb"
	h.Dir = evil
	h.Files[evil+"/main.go"] = ""
	res := resolveCase(t, goldenCase{yaml: "version: 1\n", host: func() *policytest.Host { return h }})
	prof := compileCase(t, res)
	if strings.Contains(prof.Text, "allow default") || strings.Contains(prof.Text, "src/a") {
		t.Fatal("a host path reached the profile text")
	}
	if err := balanced(prof.Text); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, kv := range prof.Params {
		found = found || kv.Value == evil
	}
	if !found {
		t.Fatal("workdir is not a parameter")
	}
}

func TestFoldRegex(t *testing.T) {
	for _, tc := range []struct {
		rel   string
		match []string
		miss  []string
	}{
		{".claude", []string{".claude", ".CLAUDE", ".cLauDe"}, []string{".claudex", "xclaude", ".claud"}},
		{".git/hooks", []string{".git/hooks", ".GIT/Hooks", ".Git/HOOKS", ".git/hoo\u212as"}, []string{".git/hook", ".git-hooks"}},
		{".vscode", []string{".VSCODE", ".v\u017fcode"}, []string{".vscod"}},
		{".yarnrc.yml", []string{".YARNRC.YML"}, []string{".yarnrcxyml"}},
		{".config/git", []string{".Config/GIT"}, []string{".config"}},
	} {
		re := regexp.MustCompile("^/" + foldRegex(tc.rel) + "(/|$)")
		for _, m := range tc.match {
			if !re.MatchString("/" + m) {
				t.Errorf("%s: %q does not match %q", tc.rel, re, m)
			}
			if !re.MatchString("/" + m + "/settings.json") {
				t.Errorf("%s: %q does not match below %q", tc.rel, re, m)
			}
		}
		for _, m := range tc.miss {
			if re.MatchString("/" + m) {
				t.Errorf("%s: %q matches %q", tc.rel, re, m)
			}
		}
	}
}

// TestVocabulary: every built-in protected or secret name can be case
// folded, so none of them silently loses threat A10 coverage.
func TestVocabulary(t *testing.T) {
	v := vocabulary()
	for _, l := range [][]string{policy.ProtectedInRoots(), policy.ProtectedInHome(), policy.SecretsInHome(), gitNames} {
		for _, e := range l {
			for c := range strings.SplitSeq(strings.Trim(e, "/"), "/") {
				if !v[c] {
					t.Errorf("built-in name %q (from %q) is not case-folded", c, e)
				}
			}
		}
	}
	for n := range v {
		if strings.ContainsAny(foldRegex(n), `"`) {
			t.Errorf("%q folds to a regex with a quote", n)
		}
	}
}

// TestFoldedRules: the case-insensitive rules are anchored at a parameter
// and name only built-in names.
func TestFoldedRules(t *testing.T) {
	prof := compileCase(t, resolveCase(t, goldenCases()["default"]))
	for _, want := range []string{
		`(regex (string-append "^" (regex-quote (param "W0")) #"/\.[cC][lL][aA][uU][dD][eE](/|$)"))`,
		`(regex (string-append "^" (regex-quote (param "W0")) #"/\.[gG][iI][tT]/[hH][oO][oO](k|K|` + "\u212a" + `)(s|S|` + "\u017f" + `)(/|$)"))`,
		`(regex (string-append "^" (regex-quote (param "W0")) #"/\.[gG][iI][tT]$"))`,
	} {
		if !strings.Contains(prof.Text, want) {
			t.Errorf("profile lacks %s", want)
		}
	}
}

func TestArgs(t *testing.T) {
	p := &Profile{Text: "(version 1)", Params: []Param{{"A0", "/x"}, {"B0", "/y=z"}}}
	want := []string{"-p", "(version 1)", "-D", "A0=/x", "-D", "B0=/y=z"}
	if diff := cmp.Diff(want, p.Args()); diff != "" {
		t.Error(diff)
	}
}
