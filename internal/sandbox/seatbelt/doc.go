// Package seatbelt compiles a resolved policy into a macOS Seatbelt
// (sandbox-exec) profile and runs it.
//
// Compile is pure and builds on every OS, so the profiles are
// golden-tested on Linux. The profile text is a static embedded base
// (base.sbpl), a generated middle that refers to paths only as
// (param "KEY"), and a static embedded tail (tail.sbpl); every host path
// travels as a sandbox-exec -D KEY=VALUE parameter, so no file name can
// change the meaning of the profile. Runner (darwin only) executes
// /usr/bin/sandbox-exec with that profile.
package seatbelt
