package policy

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, s string) *File {
	t.Helper()
	f, err := Parse("t.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestMergeLayers(t *testing.T) {
	t.Parallel()
	user := mustParse(t, "version: 1\nread_paths: [/a]\nnetwork: {mode: open}\nenv: {set: {A: user, B: user}}\n")
	proj := mustParse(t, "version: 1\nread_paths: [/b, /a]\nmode: rx\nenv: {set: {B: proj}}\nprofiles:\n  p1: {extends: p0, write_paths: [/w1]}\n  p0: {write_paths: [/w0], mode: rwx}\n")
	mode := ModeSandbox
	spec, err := Merge(MergeInput{
		Sources: []Source{{Name: "builtin", File: Builtin()}, {Name: "user", File: user}, {Name: "proj", File: proj}},
		Profile: "p1",
		Flags:   &Layer{Mode: &mode, ReadPaths: []string{"/c"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/a", "/b", "/c"}, spec.ReadPaths); diff != "" {
		t.Errorf("read_paths union (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/w0", "/w1"}, spec.WritePaths); diff != "" {
		t.Errorf("profile chain (-want +got):\n%s", diff)
	}
	if spec.Mode != ModeSandbox {
		t.Errorf("flags must win: mode = %s", spec.Mode)
	}
	if spec.Network.Mode != NetOpen {
		t.Errorf("network.mode = %s", spec.Network.Mode)
	}
	if diff := cmp.Diff(map[string]string{"A": "user", "B": "proj"}, spec.Env.Set); diff != "" {
		t.Error(diff)
	}
	wantModeSrc := []string{"builtin", "proj", "profile p0 (proj)", "flags"}
	if diff := cmp.Diff(wantModeSrc, spec.Sources["mode"]); diff != "" {
		t.Errorf("provenance (-want +got):\n%s", diff)
	}
}

func TestMergeProfileErrors(t *testing.T) {
	t.Parallel()
	cyc := mustParse(t, "version: 1\nprofiles:\n  a: {extends: b}\n  b: {extends: a}\n")
	for name, in := range map[string]MergeInput{
		"unknown profile": {Sources: []Source{{Name: "builtin", File: Builtin()}}, Profile: "nope"},
		"cycle":           {Sources: []Source{{Name: "f", File: cyc}}, Profile: "a"},
		"unknown extends": {Sources: []Source{{Name: "f", File: mustParse(t, "version: 1\nextends: ghost\n")}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Merge(in)
			if _, ok := errors.AsType[*ValidationError](err); !ok {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
		})
	}
}

func TestMergeBuiltinProfiles(t *testing.T) {
	t.Parallel()
	spec, err := Merge(MergeInput{Sources: []Source{{Name: "builtin", File: Builtin()}}, Profile: "strict"})
	if err != nil {
		t.Fatal(err)
	}
	if !spec.StartInScratch || spec.Limits.Processes == 0 {
		t.Errorf("strict profile not applied: %+v", spec)
	}
}

func TestMergeOnUnknown(t *testing.T) {
	t.Parallel()
	user := mustParse(t, "version: 1\nnetwork: {mode: filtered, on_unknown: ask}\n")
	proj := mustParse(t, "version: 1\nnetwork: {on_unknown: deny}\n")
	tests := []struct {
		name    string
		sources []Source
		want    string
		wantSrc []string
	}{
		{"builtin", []Source{{Name: "builtin", File: Builtin()}}, "deny", []string{"builtin"}},
		{"user asks", []Source{{Name: "builtin", File: Builtin()}, {Name: "user", File: user}}, "ask", []string{"builtin", "user"}},
		{"project wins", []Source{{Name: "builtin", File: Builtin()}, {Name: "user", File: user}, {Name: "proj", File: proj}}, "deny", []string{"builtin", "user", "proj"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := Merge(MergeInput{Sources: tc.sources})
			if err != nil {
				t.Fatal(err)
			}
			if spec.Network.OnUnknown != tc.want {
				t.Errorf("network.on_unknown = %q, want %q", spec.Network.OnUnknown, tc.want)
			}
			if diff := cmp.Diff(tc.wantSrc, spec.Sources["network.on_unknown"]); diff != "" {
				t.Errorf("provenance (-want +got):\n%s", diff)
			}
		})
	}
}
