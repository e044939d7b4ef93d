package facade

import "errors"

// Reasons carried in the X-Warden-Reason and X-Omac-Reason headers.
const (
	ReasonPendingCredentials = "pending-credentials"
	ReasonSkillBroken        = "skill-broken"
	ReasonSidecarDown        = "sidecar-down"
	ReasonTimeout            = "timeout"
	ReasonUnknownMount       = "unknown-mount"
	ReasonUpstreamError      = "upstream-error"
	ReasonBodyTooLarge       = "body-too-large"
	ReasonUnauthorized       = "unauthorized"
	ReasonForbiddenOrigin    = "cross-origin"
	ReasonBadHost            = "bad-host"
	ReasonBadPath            = "bad-path"
)

var (
	// ErrNoToken is returned by ServeToken when Config.Token is empty.
	ErrNoToken = errors.New("facade: token listener requires a token")
	// ErrInvalidMount is returned by SetRoute for a malformed mount name.
	ErrInvalidMount = errors.New("facade: invalid mount")
)
