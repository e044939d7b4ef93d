package policy

import (
	"testing"
)

// FuzzParse checks that no input panics the strict decoder and that an
// accepted file always merges.
func FuzzParse(f *testing.F) {
	f.Add([]byte("version: 1\n"))
	f.Add(builtinYAML)
	f.Add([]byte("version: 1\nmode: rx\nnetwork: {mode: open, allow: [a.com]}\nlimits: {memory: 1G}\n"))
	f.Add([]byte("version: 1\nprofiles: {a: {extends: b}, b: {extends: a}}\n"))
	f.Add([]byte("{\"version\": 1, \"env\": {\"set\": {\"A\": \"b\"}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		if file.Version != CurrentVersion {
			t.Fatalf("accepted version %d", file.Version)
		}
		_, _ = Merge(MergeInput{Sources: []Source{{Name: "b", File: Builtin()}, {Name: "f", File: file}}})
		for name := range file.Profiles {
			_, _ = Merge(MergeInput{Sources: []Source{{Name: "f", File: file}}, Profile: name})
		}
	})
}
