// Package all lists every harness warden can start.
package all

import (
	"github.com/wardenhq/warden/internal/harness"
	"github.com/wardenhq/warden/internal/harness/claude"
	"github.com/wardenhq/warden/internal/harness/codex"
	"github.com/wardenhq/warden/internal/harness/gemini"
	"github.com/wardenhq/warden/internal/harness/opencode"
)

// Default is the harness `warden start` runs without a name.
const Default = "opencode"

// Harnesses returns the descriptors, the default first.
func Harnesses() []*harness.Descriptor {
	return []*harness.Descriptor{opencode.New(), claude.New(), codex.New(), gemini.New()}
}
