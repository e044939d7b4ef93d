package facade

import (
	"net/url"
	"strconv"
	"strings"
)

// Env returns the environment that tells a sandboxed agent how to reach
// the facade: socketPath is the token-required socket as seen inside the
// sandbox, tcpPort the loopback port relayed to it. Per mount it adds
// WARDEN_<MOUNT>_BASE (with a trailing slash) and the omac-compatible
// OMAC_<MOUNT>_BASE and OMAC_<MOUNT>_SOCKET_BASE (without one), where
// <MOUNT> is EnvName(mount). The token is meant for the agent; these
// values must not be logged.
func Env(socketPath string, tcpPort int, token string, mounts []string) []string {
	port := strconv.Itoa(tcpPort)
	base := "http://127.0.0.1:" + port + "/"
	sock := escapeSocket(socketPath)
	env := []string{
		"WARDEN_SOCKET=" + socketPath,
		"WARDEN_BASE=" + base,
		"WARDEN_TOKEN=" + token,
		"OMAC_SOCKET=" + socketPath,
		"OMAC_HOST=127.0.0.1",
		"OMAC_PORT=" + port,
		"OMAC_BASE=" + base,
		"OMAC_SKILLS=" + strings.Join(mounts, ","),
	}
	for _, m := range mounts {
		n := EnvName(m)
		env = append(env,
			"WARDEN_"+n+"_BASE="+base+m+"/",
			"OMAC_"+n+"_BASE="+base+m,
			"OMAC_"+n+"_SOCKET_BASE=http+unix://"+sock+"/"+m,
		)
	}
	return env
}

// EnvName upper-cases mount and turns every byte that is not an ASCII
// letter or digit into '_'.
func EnvName(mount string) string {
	b := []byte(mount)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case isAlnum(c):
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// escapeSocket percent-encodes a socket path for the host part of an
// http+unix:// URL ("/" becomes %2F, space %20).
func escapeSocket(p string) string {
	return strings.ReplaceAll(url.QueryEscape(p), "+", "%20")
}
