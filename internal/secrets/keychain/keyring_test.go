package keychain_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
)

// requireNativeKeyring skips unless the OS keychain answers. On Linux that
// needs a Secret Service on the session bus; CI provides one by running
// the tests under dbus-run-session with gnome-keyring-daemon unlocked.
func requireNativeKeyring(t *testing.T) *keychain.Keyring {
	t.Helper()
	if keychain.NativeBackend() == keychain.BackendSecretService && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Skip("no Secret Service: DBUS_SESSION_BUS_ADDRESS is unset (run under dbus-run-session with gnome-keyring)")
	}
	k, err := keychain.NewKeyring(5 * time.Second)
	if err != nil {
		t.Skipf("no native keychain: %v", err)
	}
	if err := k.Ping(3 * time.Second); err != nil {
		t.Skipf("native keychain did not answer a ping: %v", err)
	}
	return k
}

func TestNativeKeyring(t *testing.T) {
	k := requireNativeKeyring(t)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	svc := secrets.ServiceForSkill("test-" + hex.EncodeToString(rnd[:]))
	t.Cleanup(func() {
		for _, a := range []string{"A", "B"} {
			_ = k.Delete(svc, a)
		}
	})
	if _, err := k.Get(svc, "A"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Get missing = %v, want ErrNotFound", err)
	}
	for _, a := range []string{"B", "A"} {
		if err := k.Set(svc, a, secrets.NewString("value-"+a)); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if err := k.Set(svc, "A", secrets.NewString("value-A2")); err != nil {
		t.Fatalf("Set replace: %v", err)
	}
	v, err := k.Get(svc, "A")
	if err != nil || v.RevealString() != "value-A2" {
		t.Fatalf("Get = %v", err)
	}
	names, err := k.List(svc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A", "B"}, names); diff != "" {
		t.Fatalf("List (-want +got):\n%s", diff)
	}
	for _, a := range []string{"A", "B"} {
		if err := k.Delete(svc, a); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if names, err := k.List(svc); err != nil || len(names) != 0 {
		t.Fatalf("List after delete = %v, %v", names, err)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	t.Run("file-explicit", func(t *testing.T) {
		t.Parallel()
		o, err := keychain.Open(keychain.Config{
			Getenv: env(map[string]string{keychain.EnvBackend: "file", keychain.EnvPassphrase: "pw"}),
			File:   keychain.FileConfig{Path: dir + "/a/k.enc"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if o.Name() != keychain.BackendFile || o.Warning != "" {
			t.Fatalf("Open = %s, %q", o.Name(), o.Warning)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		if _, err := keychain.Open(keychain.Config{Backend: "plaintext"}); err == nil {
			t.Fatal("unknown backend accepted")
		}
	})
	t.Run("foreign-native", func(t *testing.T) {
		t.Parallel()
		other := keychain.BackendWincred
		if keychain.NativeBackend() == other {
			other = keychain.BackendKeychain
		}
		if _, err := keychain.Open(keychain.Config{Backend: other}); err == nil {
			t.Fatalf("backend %s accepted on this OS", other)
		}
	})
	t.Run("default-path", func(t *testing.T) {
		t.Parallel()
		p, err := keychain.DefaultFilePath(env(map[string]string{"HOME": "/home/u"}))
		if err != nil || p != "/home/u/.local/state/warden/keyring.enc" {
			t.Fatalf("DefaultFilePath = %q, %v", p, err)
		}
		p, _ = keychain.DefaultFilePath(env(map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/x"}))
		if p != "/x/warden/keyring.enc" {
			t.Fatalf("DefaultFilePath = %q", p)
		}
	})
}

// TestOpenAutoFallback runs only where no native keychain answers: the
// automatic choice must fall back to the file, with a warning.
func TestOpenAutoFallback(t *testing.T) {
	if keychain.NativeBackend() == keychain.BackendSecretService && os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		t.Skip("a session bus is present; the automatic choice may pick the Secret Service")
	}
	if keychain.NativeBackend() != keychain.BackendSecretService {
		t.Skip("the native keychain of this OS may answer")
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	dir := t.TempDir()
	getenv := func(k string) string {
		if k == keychain.EnvPassphrase {
			return "pw"
		}
		return ""
	}
	o, err := keychain.Open(keychain.Config{Getenv: getenv, File: keychain.FileConfig{Path: dir + "/k.enc"}, PingTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if o.Name() == keychain.NativeBackend() {
		t.Skip("a Secret Service answered on the default session bus")
	}
	if o.Name() != keychain.BackendFile || o.Warning == "" {
		t.Fatalf("Open = %s, warning %q; want file with a warning", o.Name(), o.Warning)
	}
	// Without a passphrase there is no usable store, and the error says so.
	_, err = keychain.Open(keychain.Config{Getenv: func(string) string { return "" }, File: keychain.FileConfig{Path: dir + "/k2.enc"}})
	if !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatalf("Open without passphrase = %v", err)
	}
}
