package launch

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/internal/egress/mitm"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
)

// TestCAKeyStore: the interception CA's key goes to the OS keychain when
// there is one, to a 0600 file otherwise, and an existing file key is kept.
func TestCAKeyStore(t *testing.T) {
	t.Parallel()
	noKeychain := func() (secrets.Store, error) { return nil, errors.New("no D-Bus") }
	t.Run("keychain", func(t *testing.T) {
		t.Parallel()
		mock := keychain.NewMock()
		state := t.TempDir()
		ks := caKeyStore(state, func() (secrets.Store, error) { return mock, nil })
		ca, err := mitm.New(mitm.Options{Store: ks, Permitted: []string{"example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(state, "ca-key.pem")); err == nil {
			t.Error("the key went to a file although a keychain is available")
		}
		if _, err := mock.Get(caKeyService, caKeyAccount); err != nil {
			t.Fatalf("key not in the keychain: %v", err)
		}
		again, err := mitm.New(mitm.Options{Store: caKeyStore(state, func() (secrets.Store, error) { return mock, nil }), Permitted: []string{"example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if pubKey(t, again) != pubKey(t, ca) {
			t.Error("a second session made a new CA key instead of loading the stored one")
		}
		if err := ks.Save([]byte("other")); err == nil {
			t.Error("Save overwrote the stored key")
		}
	})
	t.Run("no keychain: file", func(t *testing.T) {
		t.Parallel()
		state := t.TempDir()
		if _, err := mitm.New(mitm.Options{Store: caKeyStore(state, noKeychain), Permitted: []string{"example.com"}}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(state, "ca-key.pem"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file: %v %v", st, err)
		}
	})
	t.Run("existing file wins", func(t *testing.T) {
		t.Parallel()
		state := t.TempDir()
		first, err := mitm.New(mitm.Options{Store: caKeyStore(state, noKeychain), Permitted: []string{"example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		mock := keychain.NewMock()
		second, err := mitm.New(mitm.Options{Store: caKeyStore(state, func() (secrets.Store, error) { return mock, nil }), Permitted: []string{"example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if pubKey(t, first) != pubKey(t, second) {
			t.Error("the CA key changed when a keychain appeared")
		}
		if _, err := mock.Get(caKeyService, caKeyAccount); !errors.Is(err, secrets.ErrNotFound) {
			t.Error("the file key was copied into the keychain")
		}
	})
}

// pubKey is the CA's public key (each session's CA certificate is new;
// the key is what persists).
func pubKey(t *testing.T, ca *mitm.CA) string {
	t.Helper()
	b, _ := pem.Decode(ca.CertPEM())
	if b == nil {
		t.Fatal("CA PEM")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(c.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(der)
}

// brokenStore is a keychain that cannot answer.
type brokenStore struct{ *keychain.Mock }

func (brokenStore) Get(string, string) (secrets.Secret, error) {
	return secrets.Secret{}, errors.New("no D-Bus session bus")
}

func TestCAKeyStoreBrokenKeychain(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	ks := caKeyStore(state, func() (secrets.Store, error) { return brokenStore{keychain.NewMock()}, nil })
	if _, err := mitm.New(mitm.Options{Store: ks, Permitted: []string{"example.com"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "ca-key.pem")); err != nil {
		t.Errorf("with a keychain that cannot answer the key must go to the file: %v", err)
	}
}
