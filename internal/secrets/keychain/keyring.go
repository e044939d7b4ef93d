package keychain

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/wardenhq/warden/internal/secrets"
)

var _ secrets.Store = (*Keyring)(nil)

// Backend names, as accepted by [Config] and WARDEN_KEYRING_BACKEND.
const (
	BackendSecretService = "secret-service"
	BackendKeychain      = "keychain"
	BackendWincred       = "wincred"
	BackendFile          = "file"
)

// DefaultTimeout bounds each native keyring call.
const DefaultTimeout = 10 * time.Second

// NativeBackend returns the go-keyring backend name for this OS, or "" if
// go-keyring has none.
func NativeBackend() string {
	switch runtime.GOOS {
	case "darwin":
		return BackendKeychain
	case "windows":
		return BackendWincred
	case "linux", "netbsd", "openbsd":
		return BackendSecretService
	case "freebsd", "dragonfly":
		// go-keyring supports these only when built with cgo.
		return BackendSecretService
	}
	return ""
}

// provider is the subset of go-keyring the wrapper uses; tests swap it.
type provider interface {
	Get(service, user string) (string, error)
	Set(service, user, password string) error
	Delete(service, user string) error
}

type goKeyring struct{}

func (goKeyring) Get(service, user string) (string, error) {
	if err := sessionBusCheck(); err != nil {
		return "", err
	}
	return keyring.Get(service, user)
}

func (goKeyring) Set(service, user, password string) error {
	if err := sessionBusCheck(); err != nil {
		return err
	}
	return keyring.Set(service, user, password)
}

func (goKeyring) Delete(service, user string) error {
	if err := sessionBusCheck(); err != nil {
		return err
	}
	return keyring.Delete(service, user)
}

// Keyring is a [secrets.Store] over the OS keychain via go-keyring.
//
// Every call runs with a timeout; a call that times out keeps running in
// the background until the OS answers (go-keyring offers no cancellation),
// and is reported as [secrets.ErrUnavailable]. Errors other than "not found"
// and "too large" are classified as unavailable by type, never by matching
// error text, and never read as "not found".
//
// The per-service index that backs List is kept consistent within one
// process; two processes writing the same service at once may lose an
// index entry (the secret itself is stored either way).
type Keyring struct {
	name    string
	p       provider
	timeout time.Duration
	mu      sync.Mutex // serialises index read-modify-write
}

// NewKeyring returns the native keychain of this OS. timeout bounds each
// call; zero means [DefaultTimeout].
func NewKeyring(timeout time.Duration) (*Keyring, error) {
	name := NativeBackend()
	if name == "" {
		return nil, fmt.Errorf("keychain: no native keychain on %s: %w", runtime.GOOS, secrets.ErrUnavailable)
	}
	return newKeyring(name, goKeyring{}, timeout), nil
}

func newKeyring(name string, p provider, timeout time.Duration) *Keyring {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Keyring{name: name, p: p, timeout: timeout}
}

// Name implements [secrets.Store].
func (k *Keyring) Name() string { return k.name }

// Ping checks that the keychain answers within timeout (zero means the
// call timeout) by looking up an entry that need not exist.
func (k *Keyring) Ping(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = k.timeout
	}
	_, err := run(k.name, "ping", timeout, "", func() (string, error) {
		return k.p.Get(secrets.ServicePrefix+"__ping__", "__ping__")
	})
	if err != nil && !errors.Is(err, secrets.ErrNotFound) {
		return err
	}
	return nil
}

// Get implements [secrets.Store].
func (k *Keyring) Get(service, account string) (secrets.Secret, error) {
	if err := checkNames(service, account); err != nil {
		return secrets.Secret{}, err
	}
	v, err := run(k.name, "get "+service+"/"+account, k.timeout, "", func() (string, error) {
		return k.p.Get(service, account)
	})
	if err != nil {
		return secrets.Secret{}, err
	}
	return secrets.NewString(v), nil
}

// Set implements [secrets.Store].
func (k *Keyring) Set(service, account string, s secrets.Secret) error {
	if err := checkNames(service, account); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	v := s.RevealString()
	if _, err := run(k.name, "set "+service+"/"+account, k.timeout, v, func() (string, error) {
		return "", k.p.Set(service, account, v)
	}); err != nil {
		return err
	}
	return k.updateIndex(service, func(names []string) []string {
		if !slices.Contains(names, account) {
			names = append(names, account)
		}
		return names
	})
}

// Delete implements [secrets.Store].
func (k *Keyring) Delete(service, account string) error {
	if err := checkNames(service, account); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	_, derr := run(k.name, "delete "+service+"/"+account, k.timeout, "", func() (string, error) {
		return "", k.p.Delete(service, account)
	})
	if derr != nil && !errors.Is(derr, secrets.ErrNotFound) {
		return derr
	}
	// Drop the name from the index even if the entry was already gone.
	if err := k.updateIndex(service, func(names []string) []string {
		return slices.DeleteFunc(names, func(n string) bool { return n == account })
	}); err != nil {
		return err
	}
	return derr
}

// List implements [secrets.Store].
func (k *Keyring) List(service string) ([]string, error) {
	if err := checkNames(service, "x"); err != nil {
		return nil, err
	}
	return k.readIndex(service)
}

func (k *Keyring) readIndex(service string) ([]string, error) {
	v, err := run(k.name, "read index of "+service, k.timeout, "", func() (string, error) {
		return k.p.Get(service, indexAccount)
	})
	if errors.Is(err, secrets.ErrNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return nil, fmt.Errorf("keychain: index of %s is not a JSON list of names", service)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func (k *Keyring) updateIndex(service string, f func([]string) []string) error {
	names, err := k.readIndex(service)
	if err != nil {
		return err
	}
	before := len(names)
	names = f(names)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == before && before > 0 {
		return nil // unchanged: entries are only ever added or removed
	}
	if len(names) == 0 {
		_, err := run(k.name, "delete index of "+service, k.timeout, "", func() (string, error) {
			return "", k.p.Delete(service, indexAccount)
		})
		if errors.Is(err, secrets.ErrNotFound) {
			return nil
		}
		return err
	}
	b, err := json.Marshal(names)
	if err != nil {
		return fmt.Errorf("keychain: encode index: %w", err)
	}
	_, err = run(k.name, "write index of "+service, k.timeout, "", func() (string, error) {
		return "", k.p.Set(service, indexAccount, string(b))
	})
	return err
}

// run calls f with a timeout and classifies its error. value, if not empty,
// is scrubbed from any error text the backend returns.
func run(backend, op string, timeout time.Duration, value string, f func() (string, error)) (string, error) {
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1) // buffered: a timed-out call must not block forever
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err == nil {
			return r.v, nil
		}
		return "", classify(backend, op, value, r.err)
	case <-t.C:
		return "", fmt.Errorf("keychain: %s: %s: %w: no answer within %v", backend, op, secrets.ErrUnavailable, timeout)
	}
}

func classify(backend, op, value string, err error) error {
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		return fmt.Errorf("keychain: %s: %s: %w", backend, op, secrets.ErrNotFound)
	case errors.Is(err, keyring.ErrSetDataTooBig):
		return fmt.Errorf("keychain: %s: %s: %w", backend, op, ErrTooLarge)
	}
	msg := err.Error()
	if value != "" && strings.Contains(msg, value) {
		msg = "backend error (text withheld: it quoted the secret)"
	}
	return &unavailableError{backend: backend, op: op, msg: msg, cause: err}
}

// unavailableError wraps a backend failure as [secrets.ErrUnavailable]. Its
// text is scrubbed; Unwrap still reaches the cause for errors.As.
type unavailableError struct {
	backend, op, msg string
	cause            error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("keychain: %s: %s: %v: %s", e.backend, e.op, secrets.ErrUnavailable, e.msg)
}

func (e *unavailableError) Unwrap() []error { return []error{secrets.ErrUnavailable, e.cause} }
