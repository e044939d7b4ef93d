package mitm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNoKey is returned by KeyStore.Load when no key has been saved yet.
var ErrNoKey = errors.New("mitm: no CA key stored")

// KeyStore persists the CA private key (PKCS#8 PEM).
type KeyStore interface {
	// Load returns the stored key, or an error wrapping ErrNoKey.
	Load() ([]byte, error)
	// Save stores a new key. It must not overwrite an existing one.
	Save(pem []byte) error
}

// FileKeyStore keeps the key in a file readable only by its owner.
type FileKeyStore struct {
	Path string
}

var _ KeyStore = FileKeyStore{}

// Load reads the key file, refusing one that group or others can access.
func (s FileKeyStore) Load() ([]byte, error) {
	f, err := os.Open(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("mitm: load key: %w", ErrNoKey)
	}
	if err != nil {
		return nil, fmt.Errorf("mitm: load key: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mitm: load key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("mitm: load key: %s has mode %v, want 0600", s.Path, st.Mode().Perm())
	}
	b := make([]byte, 0, st.Size())
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
		if len(b) > 1<<16 {
			return nil, fmt.Errorf("mitm: load key: %s is too large", s.Path)
		}
	}
	return b, nil
}

// Save creates the key file with mode 0600; it fails if the file exists.
func (s FileKeyStore) Save(pem []byte) error {
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("mitm: save key: %w", err)
	}
	if _, err := f.Write(pem); err != nil {
		f.Close()
		return fmt.Errorf("mitm: save key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("mitm: save key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("mitm: save key: %w", err)
	}
	return nil
}
