//go:build linux

package escape_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// underBlockedUserNS runs warden with args on a machine where user
// namespaces are blocked the way a container's seccomp profile blocks them:
// warden's own exec stage installs a filter refusing CLONE_NEWUSER, then
// becomes `warden args...`.
func underBlockedUserNS(t *testing.T, e *sandboxtest.Env, args ...string) sandboxtest.Result {
	t.Helper()
	cfg := sandbox.ChildConfig{
		Argv:    append([]string{e.Warden}, args...),
		Env:     e.Environ(),
		Dir:     e.Work,
		Seccomp: &seccomp.Config{AllowUnix: true},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = w.Write(b); w.Close() }()
	cmd := exec.Command(e.Warden, "__child", "exec")
	cmd.ExtraFiles = []*os.File{r}
	cmd.Dir = e.Work
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	r.Close()
	if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
		t.Fatal(err)
	}
	return sandboxtest.Result{Code: cmd.ProcessState.ExitCode(), Stdout: so.String(), Stderr: se.String()}
}

func TestDoctorNamesBlockedUserNamespaces(t *testing.T) {
	t.Parallel()
	e := sandboxtest.NewEnv(t)
	// The truth on this machine first.
	res := sandboxtest.Run(t, e.Warden, sandboxtest.Cmd{Dir: e.Work, Env: e.Environ(), Args: []string{"doctor", "--json"}})
	var rep struct {
		OK     bool `json:"ok"`
		Checks struct {
			UserNS      sandbox.Feature `json:"user_namespaces"`
			LandlockABI int             `json:"landlock_abi"`
		} `json:"checks"`
		Backend struct{ Auto, Why string } `json:"backend"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	if res.Code != 0 || !rep.OK || !rep.Checks.UserNS.Usable || rep.Backend.Auto != "bwrap" || rep.Checks.LandlockABI < 6 {
		t.Fatalf("doctor on this machine (user namespaces and Landlock work here):\n%s", res)
	}
	// Now with user namespaces blocked by seccomp.
	res = underBlockedUserNS(t, e, "doctor", "--json")
	rep.Checks.UserNS = sandbox.Feature{}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	if rep.Checks.UserNS.Usable {
		t.Fatalf("doctor says user namespaces work under a filter that blocks them:\n%s", res)
	}
	if !strings.Contains(rep.Checks.UserNS.Reason, "seccomp") || !strings.Contains(rep.Checks.UserNS.Fix, "--backend landlock") {
		t.Errorf("cause and fix not named: %+v", rep.Checks.UserNS)
	}
	if rep.Backend.Auto != "landlock" || res.Code != 0 {
		t.Errorf("auto = %q (exit %d), want landlock", rep.Backend.Auto, res.Code)
	}
}

// TestNoSilentFallback is threat F2: a backend that cannot start is an
// error; auto may fall back only with a notice.
func TestNoSilentFallback(t *testing.T) {
	t.Parallel()
	e := sandboxtest.NewEnv(t)
	res := underBlockedUserNS(t, e, "run", "--backend", "bwrap", "--", "true")
	if res.Code != 125 {
		t.Errorf("--backend bwrap without user namespaces: exit %d, want 125\n%s", res.Code, res)
	}
	res = underBlockedUserNS(t, e, "run", "--allow-read", filepath.Dir(e.Probe), "--", e.Probe, "read", e.Work+"/.env")
	if !strings.Contains(res.Stderr, "backend auto chose landlock") {
		t.Errorf("fallback without a notice:\n%s", res)
	}
	if got := strings.TrimSpace(res.Stdout); got != "err EACCES" {
		t.Errorf("fallback sandbox does not hold: %q", got)
	}
}
