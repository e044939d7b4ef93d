package keychain

import (
	"fmt"
	"slices"
	"sync"

	"github.com/wardenhq/warden/internal/secrets"
)

var _ secrets.Store = (*Mock)(nil)

// Mock is an in-memory [secrets.Store] for tests. Set Err to make every call
// fail with it.
type Mock struct {
	mu  sync.Mutex
	m   map[string]map[string][]byte
	Err error
}

// NewMock returns an empty Mock.
func NewMock() *Mock { return &Mock{m: map[string]map[string][]byte{}} }

// Name implements [secrets.Store].
func (*Mock) Name() string { return "mock" }

// Get implements [secrets.Store].
func (m *Mock) Get(service, account string) (secrets.Secret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return secrets.Secret{}, m.Err
	}
	v, ok := m.m[service][account]
	if !ok {
		return secrets.Secret{}, notFound(service, account)
	}
	return secrets.New(v), nil
}

// Set implements [secrets.Store].
func (m *Mock) Set(service, account string, s secrets.Secret) error {
	if err := checkNames(service, account); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return m.Err
	}
	if m.m[service] == nil {
		m.m[service] = map[string][]byte{}
	}
	m.m[service][account] = s.Reveal()
	return nil
}

// Delete implements [secrets.Store].
func (m *Mock) Delete(service, account string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return m.Err
	}
	v, ok := m.m[service][account]
	if !ok {
		return notFound(service, account)
	}
	clear(v)
	delete(m.m[service], account)
	if len(m.m[service]) == 0 {
		delete(m.m, service)
	}
	return nil
}

// List implements [secrets.Store].
func (m *Mock) List(service string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return nil, m.Err
	}
	names := make([]string, 0, len(m.m[service]))
	for k := range m.m[service] {
		names = append(names, k)
	}
	slices.Sort(names)
	return names, nil
}

func notFound(service, account string) error {
	return fmt.Errorf("keychain: %s/%s: %w", service, account, secrets.ErrNotFound)
}

// indexAccount is the reserved account holding a service's name index in
// the native keyring.
const indexAccount = "__index__"

// checkNames rejects names that are empty, reserved or hold NUL or newline
// bytes.
func checkNames(service, account string) error {
	for _, n := range []string{service, account} {
		if n == "" || len(n) > 512 {
			return fmt.Errorf("%w: name must be 1 to 512 bytes", ErrReservedName)
		}
		for _, c := range []byte(n) {
			if c == 0 || c == '\n' || c == '\r' {
				return fmt.Errorf("%w: %q holds a control character", ErrReservedName, n)
			}
		}
	}
	if account == indexAccount {
		return fmt.Errorf("%w: account %q is reserved", ErrReservedName, account)
	}
	return nil
}
