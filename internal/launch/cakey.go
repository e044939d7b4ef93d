package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/internal/egress/mitm"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
)

// The interception CA's private key in the OS keychain.
const (
	caKeyService = "warden"
	caKeyAccount = "egress-ca-key"
)

// caKeyStore is where the per-install interception CA's key lives: the OS
// keychain when there is one (Secret Service, macOS Keychain), else a 0600
// file in the state dir. A key already in the file stays there, so the CA
// users may have trusted keeps working.
func caKeyStore(state string, open func() (secrets.Store, error)) mitm.KeyStore {
	file := mitm.FileKeyStore{Path: filepath.Join(state, "ca-key.pem")}
	if _, err := os.Stat(file.Path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return file
	}
	st, err := open()
	if err != nil || st.Name() == keychain.BackendFile {
		return file
	}
	// A keychain that cannot answer (a locked collection, a daemon gone)
	// is no place for the key.
	if _, err := st.Get(caKeyService, caKeyAccount); err != nil && !errors.Is(err, secrets.ErrNotFound) {
		return file
	}
	return keychainKeyStore{st}
}

// keychainKeyStore adapts a secret store to mitm.KeyStore.
type keychainKeyStore struct{ s secrets.Store }

func (k keychainKeyStore) Load() ([]byte, error) {
	v, err := k.s.Get(caKeyService, caKeyAccount)
	if errors.Is(err, secrets.ErrNotFound) {
		return nil, fmt.Errorf("launch: CA key in %s: %w", k.s.Name(), mitm.ErrNoKey)
	}
	if err != nil {
		return nil, fmt.Errorf("launch: CA key in %s: %w", k.s.Name(), err)
	}
	return []byte(v.RevealString()), nil
}

func (k keychainKeyStore) Save(pem []byte) error {
	if _, err := k.s.Get(caKeyService, caKeyAccount); err == nil {
		return fmt.Errorf("launch: CA key in %s: already stored", k.s.Name())
	}
	if err := k.s.Set(caKeyService, caKeyAccount, secrets.New(pem)); err != nil {
		return fmt.Errorf("launch: CA key in %s: %w", k.s.Name(), err)
	}
	return nil
}
