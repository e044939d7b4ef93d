// Package skills reads, validates, discovers, hashes, snapshots and
// registers skills.
//
// A skill is a directory holding SKILL.md (agentskills.io frontmatter plus
// instructions for the agent) and, for skills with a REST sidecar, a
// manifest: omac.yaml (read unchanged, so omac bundles run as they are) or
// warden.yaml (same schema). [ParseFrontmatter] and [ParseManifest] decode
// strictly, with line numbers in every error.
//
// The trust anchor is the [Registry], kept in a host-only state directory
// the agent never sees. Approving a skill freezes a read-only [Snapshot] of
// its tree under the bundle hash ([BundleHash]); [Registry.Resolve] hands
// out only that snapshot, and refuses with a [*DriftError] once the source
// tree no longer hashes to the approved value. Non-secret config values live
// in the state directory too, never in the agent-writable workdir, and are
// re-validated against the manifest whenever they are loaded.
package skills
