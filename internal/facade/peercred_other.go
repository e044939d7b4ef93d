//go:build !linux && !darwin

package facade

import (
	"errors"
	"net"
)

// peerUID is unsupported here, so ServeUnix connections need the token.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("facade: peer credentials unsupported")
}
