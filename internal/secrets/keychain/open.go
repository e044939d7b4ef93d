package keychain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/wardenhq/warden/internal/secrets"
)

// EnvBackend names the environment variable that selects a backend:
// secret-service, keychain, wincred or file.
const EnvBackend = "WARDEN_KEYRING_BACKEND"

// DefaultPingTimeout bounds the probe that decides whether the native
// keychain is usable when no backend is chosen.
const DefaultPingTimeout = 3 * time.Second

// Config selects and configures a backend for [Open].
type Config struct {
	// Backend forces a backend; "" reads WARDEN_KEYRING_BACKEND and, if that
	// is empty too, chooses automatically.
	Backend string
	// File configures the encrypted-file backend. An empty File.Path means
	// [DefaultFilePath].
	File FileConfig
	// Timeout bounds each native keychain call; zero means [DefaultTimeout].
	Timeout time.Duration
	// PingTimeout bounds the automatic probe; zero means
	// [DefaultPingTimeout].
	PingTimeout time.Duration
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Opened is the store [Open] chose, with a warning the caller must show
// when the choice was a fallback.
type Opened struct {
	secrets.Store
	Warning string
}

// Open returns the configured backend. Asked for a specific backend, it
// opens that one or fails. Otherwise it uses the native keychain if it
// answers a ping within PingTimeout, and the encrypted file, with a Warning,
// if not.
func Open(cfg Config) (Opened, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if cfg.File.Getenv == nil {
		cfg.File.Getenv = getenv
	}
	backend := cfg.Backend
	if backend == "" {
		backend = getenv(EnvBackend)
	}
	switch backend {
	case "":
		return openAuto(cfg, getenv)
	case BackendFile:
		f, err := openFileBackend(cfg.File, getenv)
		if err != nil {
			return Opened{}, err
		}
		return Opened{Store: f}, nil
	case BackendSecretService, BackendKeychain, BackendWincred:
		if native := NativeBackend(); backend != native {
			return Opened{}, fmt.Errorf("keychain: backend %q is not available on %s (native: %q, or %q)", backend, runtime.GOOS, native, BackendFile)
		}
		k, err := NewKeyring(cfg.Timeout)
		if err != nil {
			return Opened{}, err
		}
		return Opened{Store: k}, nil
	}
	return Opened{}, fmt.Errorf("keychain: unknown backend %q (want %s, %s, %s or %s)", backend,
		BackendSecretService, BackendKeychain, BackendWincred, BackendFile)
}

func openAuto(cfg Config, getenv func(string) string) (Opened, error) {
	var reason error
	k, err := NewKeyring(cfg.Timeout)
	if err == nil {
		pt := cfg.PingTimeout
		if pt <= 0 {
			pt = DefaultPingTimeout
		}
		if reason = k.Ping(pt); reason == nil {
			return Opened{Store: k}, nil
		}
	} else {
		reason = err
	}
	f, err := openFileBackend(cfg.File, getenv)
	if err != nil {
		return Opened{}, fmt.Errorf("keychain: no usable keychain: native: %w; file: %w", reason, err)
	}
	return Opened{
		Store: f,
		Warning: fmt.Sprintf("the native keychain did not answer (%v); storing secrets in the encrypted file %s (set %s=%s to choose it explicitly)",
			reason, f.Path(), EnvBackend, BackendFile),
	}, nil
}

func openFileBackend(fc FileConfig, getenv func(string) string) (*File, error) {
	if fc.KeyFile == "" {
		fc.KeyFile = getenv(EnvKeyFile)
	}
	if fc.Path == "" {
		p, err := DefaultFilePath(getenv)
		if err != nil {
			return nil, err
		}
		fc.Path = p
	}
	return OpenFile(fc)
}

// DefaultFilePath returns $XDG_STATE_HOME/warden/keyring.enc, or
// ~/.local/state/warden/keyring.enc. getenv nil means os.Getenv.
func DefaultFilePath(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "warden", "keyring.enc"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("keychain: no home directory for the keyring file: %w", err)
		}
		home = h
	}
	if !filepath.IsAbs(home) {
		return "", errors.New("keychain: HOME is not an absolute path")
	}
	return filepath.Join(home, ".local", "state", "warden", "keyring.enc"), nil
}
