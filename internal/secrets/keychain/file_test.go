package keychain_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
)

func noEnv(string) string { return "" }

func pass(p string) func() ([]byte, error) {
	return func() ([]byte, error) { return []byte(p), nil }
}

func openFile(t *testing.T, path, p string) *keychain.File {
	t.Helper()
	f, err := keychain.OpenFile(keychain.FileConfig{Path: path, Passphrase: pass(p), Getenv: noEnv})
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	return f
}

func TestFileRoundTrip(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "keyring.enc")
	f := openFile(t, path, "correct horse")
	svc := secrets.ServiceForSkill("echo")
	if _, err := f.Get(svc, "TOKEN"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Get on empty = %v, want ErrNotFound", err)
	}
	for _, kv := range [][2]string{{"TOKEN", "tok-1"}, {"OTHER", "x\x00y\nz"}, {"TOKEN", "tok-2"}} {
		if err := f.Set(svc, kv[0], secrets.NewString(kv[1])); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if err := f.Set("warden/other", "A", secrets.NewString("a")); err != nil {
		t.Fatal(err)
	}

	// A second handle (another process, in effect) sees the same data.
	g := openFile(t, path, "correct horse")
	got, err := g.Get(svc, "TOKEN")
	if err != nil || got.RevealString() != "tok-2" {
		t.Fatalf("Get = %q, %v", got.RevealString(), err)
	}
	got, _ = g.Get(svc, "OTHER")
	if got.RevealString() != "x\x00y\nz" {
		t.Fatalf("binary value mangled: %q", got.RevealString())
	}
	names, err := g.List(svc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"OTHER", "TOKEN"}, names); diff != "" {
		t.Fatalf("List (-want +got):\n%s", diff)
	}
	if names, _ := g.List("warden/none"); len(names) != 0 {
		t.Fatalf("List unknown service = %v", names)
	}
	if err := g.Delete(svc, "TOKEN"); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(svc, "TOKEN"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("second Delete = %v, want ErrNotFound", err)
	}
	if _, err := f.Get(svc, "TOKEN"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}

	// The file is encrypted and private, its dir is 0700, no temp files remain.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"tok-", "TOKEN", "OTHER", "warden/echo"} {
		if strings.Contains(string(raw), s) {
			t.Errorf("keyring file holds plaintext %q", s)
		}
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode = %v, want %v", p, fi.Mode(), want)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
	if err := f.Set(svc, "__index__", secrets.NewString("x")); !errors.Is(err, keychain.ErrReservedName) {
		t.Errorf("Set reserved account = %v", err)
	}
}

func TestFilePassphraseFromEnv(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.enc")
	env := func(k string) string {
		if k == keychain.EnvPassphrase {
			return "from-env"
		}
		return ""
	}
	f, err := keychain.OpenFile(keychain.FileConfig{Path: path, Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Set("s", "a", secrets.NewString("v")); err != nil {
		t.Fatal(err)
	}
	// The prompt is not consulted when the env var is set...
	prompt := func() ([]byte, error) { t.Error("prompted despite env"); return nil, nil }
	if _, err := keychain.OpenFile(keychain.FileConfig{Path: path, Getenv: env, Passphrase: prompt}); err != nil {
		t.Fatal(err)
	}
	// ...and is used otherwise.
	openFile(t, path, "from-env")
	// With neither, opening fails as unavailable.
	_, err = keychain.OpenFile(keychain.FileConfig{Path: path, Getenv: noEnv})
	if !errors.Is(err, keychain.ErrNoPassphrase) || !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatalf("no passphrase = %v", err)
	}
}

func TestFileWrongPassphrase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.enc")
	f := openFile(t, path, "right")
	if err := f.Set("s", "a", secrets.NewString("value-123")); err != nil {
		t.Fatal(err)
	}
	_, err := keychain.OpenFile(keychain.FileConfig{Path: path, Passphrase: pass("wrong"), Getenv: noEnv})
	if !errors.Is(err, keychain.ErrWrongPassphrase) {
		t.Fatalf("wrong passphrase = %v, want ErrWrongPassphrase", err)
	}
	if errors.Is(err, keychain.ErrTampered) {
		t.Fatalf("wrong passphrase reported as tampering: %v", err)
	}
	if !strings.Contains(err.Error(), "wrong passphrase") || strings.Contains(err.Error(), "value-123") {
		t.Fatalf("unclear or leaking error: %v", err)
	}
}

func TestFileTamper(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mod  func([]byte) []byte
		want error
	}{
		{"ciphertext", func(b []byte) []byte { b[len(b)-20] ^= 1; return b }, keychain.ErrTampered},
		{"tag", func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }, keychain.ErrTampered},
		{"nonce", func(b []byte) []byte { b[45] ^= 1; return b }, keychain.ErrTampered},
		{"truncated", func(b []byte) []byte { return b[:len(b)-5] }, keychain.ErrTampered},
		{"short", func(b []byte) []byte { return b[:30] }, keychain.ErrTampered},
		{"scrypt-params", func(b []byte) []byte { b[7]++; return b }, nil}, // changes the key: either error is fine
		{"check", func(b []byte) []byte { b[30] ^= 1; return b }, keychain.ErrWrongPassphrase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "k.enc")
			f := openFile(t, path, "pw")
			if err := f.Set("s", "a", secrets.NewString("v")); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.mod(b), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = keychain.OpenFile(keychain.FileConfig{Path: path, Passphrase: pass("pw"), Getenv: noEnv})
			if err == nil {
				t.Fatal("OpenFile accepted a modified file")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("OpenFile = %v, want %v", err, tc.want)
			}
			// An already-open handle refuses too.
			if _, err := f.Get("s", "a"); err == nil {
				t.Fatal("Get on a modified file succeeded")
			}
			if err := f.Set("s", "b", secrets.NewString("w")); err == nil {
				t.Fatal("Set over a modified file succeeded")
			}
		})
	}
}

func TestFilePermissions(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Log("running as root: mode checks still apply to the owner's own files")
	}
	t.Run("world-readable-keyring", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "k.enc")
		openFile(t, path, "pw")
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := keychain.OpenFile(keychain.FileConfig{Path: path, Passphrase: pass("pw"), Getenv: noEnv})
		_, ok := errors.AsType[*keychain.PermError](err)
		if !ok {
			t.Fatalf("OpenFile = %v, want *PermError", err)
		}
	})
	t.Run("open-dir", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		_, err := keychain.OpenFile(keychain.FileConfig{Path: filepath.Join(dir, "k.enc"), Passphrase: pass("pw"), Getenv: noEnv})
		_, ok := errors.AsType[*keychain.PermError](err)
		if !ok {
			t.Fatalf("OpenFile = %v, want *PermError", err)
		}
	})
	t.Run("symlinked-keyring", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		openFile(t, filepath.Join(dir, "real.enc"), "pw")
		if err := os.Symlink("real.enc", filepath.Join(dir, "k.enc")); err != nil {
			t.Fatal(err)
		}
		_, err := keychain.OpenFile(keychain.FileConfig{Path: filepath.Join(dir, "k.enc"), Passphrase: pass("pw"), Getenv: noEnv})
		_, ok := errors.AsType[*keychain.PermError](err)
		if !ok {
			t.Fatalf("OpenFile = %v, want *PermError", err)
		}
	})
	t.Run("world-readable-keyfile", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		kf := filepath.Join(dir, "key")
		if err := keychain.GenerateKeyFile(kf); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(kf, 0o604); err != nil {
			t.Fatal(err)
		}
		_, err := keychain.OpenFile(keychain.FileConfig{Path: filepath.Join(dir, "k.enc"), KeyFile: kf, Getenv: noEnv})
		_, ok := errors.AsType[*keychain.PermError](err)
		if !ok {
			t.Fatalf("OpenFile = %v, want *PermError", err)
		}
	})
}

func TestFileKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kf := filepath.Join(dir, "key")
	if err := keychain.GenerateKeyFile(kf); err != nil {
		t.Fatal(err)
	}
	if err := keychain.GenerateKeyFile(kf); err == nil {
		t.Fatal("GenerateKeyFile overwrote an existing file")
	}
	path := filepath.Join(dir, "k.enc")
	f, err := keychain.OpenFile(keychain.FileConfig{Path: path, KeyFile: kf, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Set("s", "a", secrets.NewString("v")); err != nil {
		t.Fatal(err)
	}
	g, err := keychain.OpenFile(keychain.FileConfig{Path: path, KeyFile: kf, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := g.Get("s", "a"); err != nil || v.RevealString() != "v" {
		t.Fatalf("Get = %v", err)
	}
	// A different key is a wrong key; a passphrase on a key-file keyring too.
	kf2 := filepath.Join(dir, "key2")
	if err := keychain.GenerateKeyFile(kf2); err != nil {
		t.Fatal(err)
	}
	if _, err := keychain.OpenFile(keychain.FileConfig{Path: path, KeyFile: kf2, Getenv: noEnv}); !errors.Is(err, keychain.ErrWrongPassphrase) {
		t.Fatalf("other key = %v", err)
	}
	if _, err := keychain.OpenFile(keychain.FileConfig{Path: path, Passphrase: pass("pw"), Getenv: noEnv}); !errors.Is(err, keychain.ErrWrongPassphrase) {
		t.Fatalf("passphrase on key-file keyring = %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := keychain.OpenFile(keychain.FileConfig{Path: filepath.Join(dir, "k2.enc"), KeyFile: bad, Getenv: noEnv}); err == nil {
		t.Fatal("accepted a malformed key file")
	}
}

func TestFileConcurrentWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.enc")
	openFile(t, path, "pw")
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errc := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			// Each writer has its own handle and lock fd, as separate
			// processes would.
			f, err := keychain.OpenFile(keychain.FileConfig{Path: path, Passphrase: pass("pw"), Getenv: noEnv})
			if err != nil {
				errc <- err
				return
			}
			for i := range each {
				if err := f.Set("s", fmt.Sprintf("w%d-%d", w, i), secrets.NewString("v")); err != nil {
					errc <- err
				}
				if _, err := f.List("s"); err != nil {
					errc <- err
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	names, err := openFile(t, path, "pw").List("s")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != writers*each {
		t.Fatalf("got %d entries, want %d: lost updates", len(names), writers*each)
	}
}

func TestFileConcurrentCreate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.enc")
	var wg sync.WaitGroup
	files := make([]*keychain.File, 6)
	for i := range files {
		wg.Go(func() {
			f, err := keychain.OpenFile(keychain.FileConfig{Path: path, Passphrase: pass("pw"), Getenv: noEnv})
			if err != nil {
				t.Error(err)
				return
			}
			files[i] = f
		})
	}
	wg.Wait()
	for i, f := range files {
		if f == nil {
			continue
		}
		if err := f.Set("s", fmt.Sprint(i), secrets.NewString("v")); err != nil {
			t.Errorf("handle %d: %v", i, err)
		}
	}
}

func TestMock(t *testing.T) {
	t.Parallel()
	m := keychain.NewMock()
	if err := m.Set("s", "b", secrets.NewString("2")); err != nil {
		t.Fatal(err)
	}
	if err := m.Set("s", "a", secrets.NewString("1")); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Get("s", "a"); err != nil || v.RevealString() != "1" {
		t.Fatalf("Get = %v", err)
	}
	names, _ := m.List("s")
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Fatal(diff)
	}
	if err := m.Delete("s", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get("s", "a"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatal(err)
	}
	m.Err = secrets.ErrUnavailable
	if _, err := m.Get("s", "b"); !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatal(err)
	}
}

// TestOpenKeyFileFromEnv: WARDEN_KEYRING_KEYFILE makes the file backend use
// that key (no passphrase needed); the same store then refuses a
// passphrase, and a missing key file is an error, not a fallback.
func TestOpenKeyFileFromEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "k.key")
	if err := keychain.GenerateKeyFile(key); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{keychain.EnvBackend: keychain.BackendFile, keychain.EnvKeyFile: key, "XDG_DATA_HOME": dir, "HOME": dir}
	env := func(k string) string { return vars[k] }
	o, err := keychain.Open(keychain.Config{Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Set("s", "a", secrets.NewString("v")); err != nil {
		t.Fatal(err)
	}
	o2, err := keychain.Open(keychain.Config{Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := o2.Get("s", "a"); err != nil || v.RevealString() != "v" {
		t.Fatalf("get = %v", err)
	}
	vars[keychain.EnvKeyFile], vars[keychain.EnvPassphrase] = "", "guess"
	if _, err := keychain.Open(keychain.Config{Getenv: env}); !errors.Is(err, keychain.ErrWrongPassphrase) {
		t.Errorf("a passphrase opened a key-file store: %v", err)
	}
	vars[keychain.EnvKeyFile] = filepath.Join(dir, "missing.key")
	if _, err := keychain.Open(keychain.Config{Getenv: env}); err == nil {
		t.Error("a missing key file was accepted")
	}
}
