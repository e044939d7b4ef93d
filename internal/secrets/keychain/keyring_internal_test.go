package keychain

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zalando/go-keyring"

	"github.com/wardenhq/warden/internal/secrets"
)

// fakeProvider mimics go-keyring: a map, keyring.ErrNotFound, and optional
// failure or delay.
type fakeProvider struct {
	mu    sync.Mutex
	m     map[[2]string]string
	err   error
	delay time.Duration
}

func (f *fakeProvider) wait() error {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	return f.err
}

func (f *fakeProvider) Get(s, u string) (string, error) {
	if err := f.wait(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[[2]string{s, u}]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return v, nil
}

func (f *fakeProvider) Set(s, u, p string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[[2]string{s, u}] = p
	return nil
}

func (f *fakeProvider) Delete(s, u string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[[2]string{s, u}]; !ok {
		return keyring.ErrNotFound
	}
	delete(f.m, [2]string{s, u})
	return nil
}

func TestKeyringIndex(t *testing.T) {
	t.Parallel()
	p := &fakeProvider{m: map[[2]string]string{}}
	k := newKeyring("fake", p, time.Second)
	svc := secrets.ServiceForSkill("echo")
	for _, a := range []string{"B", "A", "B"} {
		if err := k.Set(svc, a, secrets.NewString("v-"+a)); err != nil {
			t.Fatal(err)
		}
	}
	names, err := k.List(svc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A", "B"}, names); diff != "" {
		t.Fatalf("List (-want +got):\n%s", diff)
	}
	if got := p.m[[2]string{svc, indexAccount}]; got != `["A","B"]` {
		t.Fatalf("index entry = %q", got)
	}
	if v, err := k.Get(svc, "A"); err != nil || v.RevealString() != "v-A" {
		t.Fatalf("Get = %v", err)
	}
	if _, err := k.Get(svc, "C"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Get missing = %v", err)
	}
	if err := k.Set(svc, indexAccount, secrets.NewString("x")); !errors.Is(err, ErrReservedName) {
		t.Fatalf("Set index account = %v", err)
	}
	if err := k.Delete(svc, "A"); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(svc, "A"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("second Delete = %v", err)
	}
	if err := k.Delete(svc, "B"); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.m[[2]string{svc, indexAccount}]; ok {
		t.Fatal("empty index entry was not removed")
	}
	if names, err := k.List(svc); err != nil || len(names) != 0 {
		t.Fatalf("List after deletes = %v, %v", names, err)
	}
}

func TestKeyringClassify(t *testing.T) {
	t.Parallel()
	const value = "sup3r-s3cret-value"
	p := &fakeProvider{m: map[[2]string]string{}, err: errors.New("dbus: org.freedesktop.secrets not provided; echo " + value)}
	k := newKeyring("fake", p, time.Second)
	err := k.Set("s", "a", secrets.NewString(value))
	if !errors.Is(err, secrets.ErrUnavailable) || errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Set = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), value) {
		t.Fatalf("error text leaks the secret: %v", err)
	}
	if _, err := k.Get("s", "a"); !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatalf("Get = %v, want ErrUnavailable (never not-found)", err)
	}
	if err := k.Ping(0); !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatalf("Ping = %v", err)
	}
	p.err = keyring.ErrSetDataTooBig
	if err := k.Set("s", "a", secrets.NewString(value)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Set too big = %v", err)
	}
	p.err = nil
	if err := k.Ping(0); err != nil {
		t.Fatalf("Ping on a working keyring = %v", err)
	}
}

func TestKeyringTimeout(t *testing.T) {
	t.Parallel()
	p := &fakeProvider{m: map[[2]string]string{}, delay: 2 * time.Second}
	k := newKeyring("fake", p, 50*time.Millisecond)
	start := time.Now()
	_, err := k.Get("s", "a")
	if !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatalf("Get = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if err := k.Ping(20 * time.Millisecond); !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatalf("Ping = %v", err)
	}
}
