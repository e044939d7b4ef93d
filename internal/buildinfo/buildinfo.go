// Package buildinfo reports warden's version.
package buildinfo

import "runtime/debug"

// Version is set with -ldflags "-X github.com/wardenhq/warden/internal/buildinfo.Version=v1.2.3".
var Version = ""

// String returns the version, falling back to the module and VCS info.
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}
