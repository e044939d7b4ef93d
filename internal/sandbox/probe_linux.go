//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ProbeOptions tune ProbeHost.
type ProbeOptions struct {
	// Full runs bubblewrap once to prove that it can build a sandbox
	// (doctor); without it, user namespaces are checked with sysctls and
	// one clone(CLONE_NEWUSER).
	Full bool
	// LandlockABI reports the kernel's Landlock ABI (injected to keep this
	// package free of the landlock package).
	LandlockABI func() (int, error)
}

// ProbeHost inspects the running machine.
func ProbeHost(ctx context.Context, o ProbeOptions) *Probe {
	p := &Probe{OS: runtime.GOOS, Arch: runtime.GOARCH}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		p.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	// bubblewrap
	for _, c := range []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap"} {
		if fi, err := os.Stat(c); err == nil && fi.Mode()&0o111 != 0 {
			p.Bwrap = Feature{Usable: true, Detail: c}
			break
		}
	}
	if !p.Bwrap.Usable {
		if c, err := exec.LookPath("bwrap"); err == nil {
			p.Bwrap = Feature{Usable: true, Detail: c}
		} else {
			p.Bwrap = Feature{Reason: "bubblewrap is not installed", Fix: "apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora)"}
		}
	}
	p.UserNS = probeUserNS(ctx, p.Bwrap, o.Full)
	if p.Bwrap.Usable && o.Full {
		if out, err := exec.CommandContext(ctx, p.Bwrap.Detail, "--version").Output(); err == nil { //nolint:gosec // G204: the bwrap found above
			p.Bwrap.Detail += " (" + strings.TrimSpace(string(out)) + ")"
		}
	}
	// Landlock
	if o.LandlockABI != nil {
		abi, err := o.LandlockABI()
		p.LandlockABI = abi
		switch {
		case err != nil:
			p.Landlock = Feature{Reason: err.Error(), Fix: "a kernel ≥ 6.7 with CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter"}
		case abi < 6:
			p.Landlock = Feature{Detail: "ABI " + itoa(abi), Reason: "warden needs Landlock ABI 6 (kernel 6.12) for IPC scoping", Fix: "upgrade the kernel, or set landlock: best-effort in the policy"}
		default:
			p.Landlock = Feature{Usable: true, Detail: "ABI " + itoa(abi)}
		}
	}
	// seccomp
	if b, err := os.ReadFile("/proc/self/status"); err == nil && bytes.Contains(b, []byte("\nSeccomp:")) {
		mode := "0"
		for l := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
				mode = strings.TrimSpace(v)
			}
		}
		detail := "filter mode available"
		if mode == "2" {
			detail += "; warden itself already runs under a filter (a container?)"
		}
		p.Seccomp = Feature{Usable: true, Detail: detail}
	} else {
		p.Seccomp = Feature{Reason: "the kernel has no seccomp filter support", Fix: "a kernel built with CONFIG_SECCOMP_FILTER=y"}
	}
	p.CgroupV2 = probeCgroup()
	return p
}

func readSysctl(name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/")))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func probeUserNS(ctx context.Context, bw Feature, full bool) Feature {
	if v, ok := readSysctl("kernel.unprivileged_userns_clone"); ok && v == "0" && os.Getuid() != 0 {
		return Feature{Reason: "the sysctl kernel.unprivileged_userns_clone is 0", Fix: "sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/), or use --backend landlock"}
	}
	if v, ok := readSysctl("user.max_user_namespaces"); ok && v == "0" {
		return Feature{Reason: "the sysctl user.max_user_namespaces is 0", Fix: "sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/), or use --backend landlock"}
	}
	apparmor := false
	if v, ok := readSysctl("kernel.apparmor_restrict_unprivileged_userns"); ok && v == "1" && os.Getuid() != 0 {
		apparmor = true
	}
	// One real attempt: a seccomp filter (Docker's default profile, for
	// one) refuses it even when the sysctls allow it. Such a filter is
	// visible in our own status, so the quick probe only tries when one
	// is there.
	if !full && !underSeccomp() && !apparmor {
		return Feature{Usable: true, Detail: "sysctls allow user namespaces"}
	}
	trueBin := "/usr/bin/true"
	if _, err := os.Stat(trueBin); err != nil {
		trueBin = "/bin/true"
	}
	cmd := exec.CommandContext(ctx, trueBin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Run(); err != nil {
		if _, ok := errors.AsType[*exec.ExitError](err); !ok {
			reason := "clone(CLONE_NEWUSER) failed: " + err.Error()
			if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
				reason += "; the sysctls allow user namespaces, so a seccomp filter or the container runtime blocks them"
			}
			return Feature{Reason: reason, Fix: "run warden with --backend landlock, or allow user namespaces in the container (e.g. a seccomp profile that permits clone/unshare with CLONE_NEWUSER)"}
		}
	}
	if !full && !apparmor {
		return Feature{Usable: true}
	}
	if !bw.Usable {
		if apparmor {
			return Feature{Reason: "kernel.apparmor_restrict_unprivileged_userns=1 restricts user namespaces to programs with an AppArmor profile"}
		}
		return Feature{Usable: true, Detail: "clone(CLONE_NEWUSER) works; bubblewrap is not installed to prove the rest"}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, bw.Detail, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true").CombinedOutput() //nolint:gosec // G204: the probed bwrap path
	if err == nil {
		return Feature{Usable: true, Detail: "bubblewrap built a test sandbox"}
	}
	msg := strings.TrimSpace(string(out))
	if msg == "" {
		msg = err.Error()
	}
	f := Feature{Reason: "bubblewrap failed: " + msg}
	switch {
	case apparmor || strings.Contains(msg, "setting up uid map") || strings.Contains(msg, "RTM_NEWADDR"):
		f.Reason += " (AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns=1)"
		f.Fix = "allow bwrap user namespaces with an AppArmor profile, e.g. /etc/apparmor.d/bwrap:\n" +
			"  abi <abi/4.0>,\n  include <tunables/global>\n  profile bwrap /usr/bin/bwrap flags=(unconfined) {\n    userns,\n    include if exists <local/bwrap>\n  }\n" +
			"then: sudo apparmor_parser -r /etc/apparmor.d/bwrap — or use --backend landlock"
	case strings.Contains(msg, "No permissions to create new namespace"):
		f.Fix = "enable unprivileged user namespaces (kernel.unprivileged_userns_clone=1), or use --backend landlock"
	default:
		f.Fix = "see the bubblewrap message above; --backend landlock works without namespaces"
	}
	return f
}

// underSeccomp reports whether this process already runs under a seccomp
// filter (a container runtime's, typically).
func underSeccomp() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true // unknown: probe for real
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

func probeCgroup() Feature {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		return Feature{Reason: "cgroup v2 is not mounted at /sys/fs/cgroup", Fix: "boot with systemd.unified_cgroup_hierarchy=1"}
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Feature{Reason: err.Error()}
	}
	var rel string
	for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if r, ok := strings.CutPrefix(l, "0::"); ok {
			rel = r
		}
	}
	dir := filepath.Join("/sys/fs/cgroup", rel)
	if unix.Access(dir, unix.W_OK) != nil {
		return Feature{Detail: dir, Reason: "warden's cgroup is not writable (not delegated)", Fix: "run under systemd-run --user --scope -p Delegate=yes, or as root; limits then use rlimits only"}
	}
	return Feature{Usable: true, Detail: dir}
}
