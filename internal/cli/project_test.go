package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProjectPolicyApproval: a project's .warden/policy.yaml is ignored
// (with a notice) until approved, honoured once approved, ignored again
// after any change, and forgotten on revoke.
func TestProjectPolicyApproval(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	proj := t.TempDir()
	t.Chdir(proj)
	pf := filepath.Join(proj, ".warden", "policy.yaml")
	if err := os.MkdirAll(filepath.Dir(pf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pf, []byte("version: 1\nenv:\n  set: {FROM_PROJECT: yes}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		f, out, errOut := testFactory()
		return Main(context.Background(), f, args), out.String(), errOut.String()
	}
	honoured := func() (bool, string) {
		code, out, errOut := run("policy", "show")
		if code != 0 {
			t.Fatalf("policy show: %d %s", code, errOut)
		}
		return strings.Contains(out, "FROM_PROJECT"), errOut
	}

	if ok, notice := honoured(); ok || !strings.Contains(notice, "not approved") {
		t.Fatalf("unapproved project policy honoured=%v, notice %q", ok, notice)
	}
	if code, _, errOut := run("policy", "approve"); code == 0 {
		t.Fatalf("approve without a terminal or --yes succeeded: %s", errOut)
	}
	if code, _, errOut := run("policy", "approve", "--yes"); code != 0 || !strings.Contains(errOut, "approved sha256:") {
		t.Fatalf("approve --yes: %d %s", code, errOut)
	}
	if ok, notice := honoured(); !ok || notice != "" {
		t.Fatalf("approved project policy honoured=%v, notice %q", ok, notice)
	}
	if err := os.WriteFile(pf, []byte("version: 1\nmode: rwx\nenv:\n  set: {FROM_PROJECT: yes}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, notice := honoured(); ok || !strings.Contains(notice, "changed since approved") {
		t.Fatalf("changed project policy honoured=%v, notice %q", ok, notice)
	}
	if code, _, _ := run("policy", "approve", "--yes"); code != 0 {
		t.Fatal("re-approve failed")
	}
	if code, _, _ := run("policy", "revoke"); code != 0 {
		t.Fatal("revoke failed")
	}
	if ok, notice := honoured(); ok || !strings.Contains(notice, "not approved") {
		t.Fatalf("revoked project policy honoured=%v, notice %q", ok, notice)
	}
	if err := os.WriteFile(pf, []byte("version: 1\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run("policy", "approve", "--yes"); code != 3 {
		t.Errorf("approving an invalid policy: exit %d, want 3", code)
	}
}
