package policytest

import (
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is the -update flag of every test package that compares golden
// files through Golden.
var update = flag.Bool("update", false, "rewrite golden files")

// Golden compares got with the file at path, or rewrites the file when the
// test runs with -update (review the diff before committing it).
func Golden(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path) //nolint:gosec // G304: a golden file of the calling test
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
