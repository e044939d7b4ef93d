package keychain

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"unicode"

	"github.com/wardenhq/warden/internal/fsutil"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/scrypt"

	"github.com/wardenhq/warden/internal/secrets"
)

var _ secrets.Store = (*File)(nil)

// EnvPassphrase names the environment variable that holds the passphrase
// of the encrypted-file keyring.
const EnvPassphrase = "WARDEN_KEYRING_PASSPHRASE" //nolint:gosec // G101: the name of a variable, not a credential

// EnvKeyFile names the environment variable that names a 0600 key file
// (see GenerateKeyFile) for the encrypted-file backend, instead of a
// passphrase: no key derivation at each start, for headless machines.
const EnvKeyFile = "WARDEN_KEYRING_KEYFILE"

// File format, version 1 (all integers big-endian):
//
//	0   magic "WKRF"
//	4   version (1)
//	5   kdf: 1 scrypt(passphrase), 2 raw key file
//	6   scrypt log2(N), r, p (zero for a key file)
//	9   salt (16 bytes)
//	25  key check: HMAC-SHA256(key, "warden keyring key check v1")[:16]
//	41  XChaCha20-Poly1305 nonce (24 bytes)
//	65  ciphertext of the JSON store, with the 16-byte tag
//
// Bytes 0..41 are the associated data, so the version, KDF parameters, salt
// and key check are all authenticated. The key check tells a wrong
// passphrase apart from a tampered file.
const (
	fileMagic    = "WKRF"
	fileVersion  = 1
	kdfScrypt    = 1
	kdfKeyFile   = 2
	saltLen      = 16
	checkLen     = 16
	headerLen    = 4 + 1 + 1 + 3 + saltLen + checkLen
	maxFileBytes = 16 << 20
)

// scrypt cost; tests lower scryptLogN.
var (
	scryptLogN byte = 15
	scryptR    byte = 8
	scryptP    byte = 1
)

// FileConfig configures [OpenFile].
type FileConfig struct {
	// Path is the keyring file. Its parent directory is created 0700.
	Path string
	// KeyFile, if set, names a 0600 file holding a 32-byte key (raw or as 64
	// hex digits), used instead of a passphrase.
	KeyFile string
	// Passphrase is asked for a passphrase when KeyFile is empty and
	// WARDEN_KEYRING_PASSPHRASE is unset. The returned slice is wiped.
	Passphrase func() ([]byte, error)
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// File is a [secrets.Store] kept in one encrypted file. Each call reads the
// file under a shared flock and each change rewrites it atomically under an
// exclusive flock on a sibling ".lock" file, so several processes can share
// it. The key stays in memory for the life of the File.
type File struct {
	path string
	hdr  [headerLen]byte // header the key was derived for
	key  [chacha20poly1305.KeySize]byte
}

// store is the plaintext layout. encoding/json writes []byte as base64.
type store struct {
	Services map[string]map[string][]byte `json:"services"`
}

// OpenFile opens or creates the keyring file and derives its key. A wrong
// passphrase is [ErrWrongPassphrase]; a modified file is [ErrTampered];
// a key, keyring or directory that other users can read or replace is a
// [*PermError].
func OpenFile(cfg FileConfig) (*File, error) {
	if cfg.Path == "" {
		return nil, errors.New("keychain: file backend needs a path")
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("keychain: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("keychain: create keyring dir: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return nil, err
	}
	f := &File{path: path}
	unlock, err := f.lock(true)
	if err != nil {
		return nil, err
	}
	defer unlock()

	data, err := f.readRaw()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := f.create(cfg, getenv); err != nil {
			return nil, err
		}
		return f, nil
	case err != nil:
		return nil, err
	}
	if len(data) < headerLen+chacha20poly1305.NonceSizeX+chacha20poly1305.Overhead {
		return nil, fmt.Errorf("%w: %s is truncated", ErrTampered, path)
	}
	copy(f.hdr[:], data)
	if string(f.hdr[:4]) != fileMagic {
		return nil, fmt.Errorf("keychain: %s is not a warden keyring file", path)
	}
	if f.hdr[4] != fileVersion {
		return nil, fmt.Errorf("keychain: %s has unsupported version %d", path, f.hdr[4])
	}
	if err := f.deriveKey(cfg, getenv); err != nil {
		return nil, err
	}
	if !hmac.Equal(f.hdr[25:25+checkLen], keyCheck(f.key[:])) {
		return nil, fmt.Errorf("%w (%s)", ErrWrongPassphrase, path)
	}
	st, err := f.decrypt(data)
	if err != nil {
		return nil, err
	}
	st.wipe()
	return f, nil
}

// Name implements [secrets.Store].
func (*File) Name() string { return BackendFile }

// Path returns the keyring file path.
func (f *File) Path() string { return f.path }

// Get implements [secrets.Store].
func (f *File) Get(service, account string) (secrets.Secret, error) {
	if err := checkNames(service, account); err != nil {
		return secrets.Secret{}, err
	}
	unlock, err := f.lock(false)
	if err != nil {
		return secrets.Secret{}, err
	}
	defer unlock()
	st, err := f.load()
	if err != nil {
		return secrets.Secret{}, err
	}
	defer st.wipe()
	v, ok := st.Services[service][account]
	if !ok {
		return secrets.Secret{}, notFound(service, account)
	}
	return secrets.New(v), nil
}

// Set implements [secrets.Store].
func (f *File) Set(service, account string, s secrets.Secret) error {
	if err := checkNames(service, account); err != nil {
		return err
	}
	return f.update(func(st *store) error {
		if st.Services[service] == nil {
			st.Services[service] = map[string][]byte{}
		}
		clear(st.Services[service][account])
		st.Services[service][account] = s.Reveal()
		return nil
	})
}

// Delete implements [secrets.Store].
func (f *File) Delete(service, account string) error {
	if err := checkNames(service, account); err != nil {
		return err
	}
	return f.update(func(st *store) error {
		v, ok := st.Services[service][account]
		if !ok {
			return notFound(service, account)
		}
		clear(v)
		delete(st.Services[service], account)
		if len(st.Services[service]) == 0 {
			delete(st.Services, service)
		}
		return nil
	})
}

// List implements [secrets.Store].
func (f *File) List(service string) ([]string, error) {
	unlock, err := f.lock(false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := f.load()
	if err != nil {
		return nil, err
	}
	defer st.wipe()
	names := make([]string, 0, len(st.Services[service]))
	for n := range st.Services[service] {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// update runs a read-modify-write under the exclusive lock.
func (f *File) update(mod func(*store) error) error {
	unlock, err := f.lock(true)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := f.load()
	if err != nil {
		return err
	}
	defer st.wipe()
	if err := mod(st); err != nil {
		return err
	}
	return f.write(st)
}

// load reads and decrypts the file; a missing file is an empty store.
func (f *File) load() (*store, error) {
	data, err := f.readRaw()
	if errors.Is(err, fs.ErrNotExist) {
		return &store{Services: map[string]map[string][]byte{}}, nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) < headerLen || !bytes.Equal(data[:headerLen], f.hdr[:]) {
		if len(data) >= headerLen && bytes.Equal(data[:25], f.hdr[:25]) {
			return nil, fmt.Errorf("%w: %s", ErrTampered, f.path)
		}
		return nil, fmt.Errorf("keychain: %s was re-created with another key since it was opened; reopen it", f.path)
	}
	return f.decrypt(data)
}

func (f *File) decrypt(data []byte) (*store, error) {
	aead, err := chacha20poly1305.NewX(f.key[:])
	if err != nil {
		return nil, fmt.Errorf("keychain: %w", err)
	}
	if len(data) < headerLen+aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%w: %s is truncated", ErrTampered, f.path)
	}
	nonce := data[headerLen : headerLen+aead.NonceSize()]
	pt, err := aead.Open(nil, nonce, data[headerLen+aead.NonceSize():], data[:headerLen])
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrTampered, f.path)
	}
	defer clear(pt)
	st := &store{}
	if err := json.Unmarshal(pt, st); err != nil {
		return nil, fmt.Errorf("%w: %s holds no valid store", ErrTampered, f.path)
	}
	if st.Services == nil {
		st.Services = map[string]map[string][]byte{}
	}
	return st, nil
}

// write encrypts st and atomically replaces the file.
func (f *File) write(st *store) error {
	pt, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("keychain: encode store: %w", err)
	}
	defer clear(pt)
	aead, err := chacha20poly1305.NewX(f.key[:])
	if err != nil {
		return fmt.Errorf("keychain: %w", err)
	}
	out := make([]byte, headerLen+aead.NonceSize(), headerLen+aead.NonceSize()+len(pt)+aead.Overhead())
	copy(out, f.hdr[:])
	if _, err := rand.Read(out[headerLen:]); err != nil {
		return fmt.Errorf("keychain: nonce: %w", err)
	}
	out = aead.Seal(out, out[headerLen:], pt, out[:headerLen])
	return writeAtomic(f.path, out)
}

// readRaw reads the file after checking it is a private regular file.
func (f *File) readRaw() ([]byte, error) {
	if err := checkPrivate(f.path, false); err != nil {
		return nil, err
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("keychain: read %s: %w", f.path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("keychain: %s is larger than %d bytes", f.path, maxFileBytes)
	}
	return data, nil
}

// create starts a new, empty keyring file. The caller holds the lock.
func (f *File) create(cfg FileConfig, getenv func(string) string) error {
	copy(f.hdr[:4], fileMagic)
	f.hdr[4] = fileVersion
	if cfg.KeyFile != "" {
		f.hdr[5] = kdfKeyFile
	} else {
		f.hdr[5] = kdfScrypt
		f.hdr[6], f.hdr[7], f.hdr[8] = scryptLogN, scryptR, scryptP
	}
	if _, err := rand.Read(f.hdr[9 : 9+saltLen]); err != nil {
		return fmt.Errorf("keychain: salt: %w", err)
	}
	if err := f.deriveKey(cfg, getenv); err != nil {
		return err
	}
	copy(f.hdr[25:], keyCheck(f.key[:]))
	return f.write(&store{Services: map[string]map[string][]byte{}})
}

// deriveKey fills f.key from the configured source and the header's KDF.
func (f *File) deriveKey(cfg FileConfig, getenv func(string) string) error {
	switch f.hdr[5] {
	case kdfKeyFile:
		if cfg.KeyFile == "" {
			return fmt.Errorf("%w: %s was created with a key file, but none is configured", ErrWrongPassphrase, f.path)
		}
		key, err := readKeyFile(cfg.KeyFile)
		if err != nil {
			return err
		}
		copy(f.key[:], key)
		clear(key)
		return nil
	case kdfScrypt:
		if cfg.KeyFile != "" {
			return fmt.Errorf("%w: %s was created with a passphrase, but a key file is configured", ErrWrongPassphrase, f.path)
		}
		logN, r, p := f.hdr[6], f.hdr[7], f.hdr[8]
		if logN < 10 || logN > 22 || r < 1 || r > 32 || p < 1 || p > 16 {
			return fmt.Errorf("%w: %s has out-of-range scrypt parameters", ErrTampered, f.path)
		}
		pass, err := passphrase(cfg, getenv)
		if err != nil {
			return err
		}
		defer clear(pass)
		key, err := scrypt.Key(pass, f.hdr[9:9+saltLen], 1<<logN, int(r), int(p), len(f.key))
		if err != nil {
			return fmt.Errorf("keychain: derive key: %w", err)
		}
		copy(f.key[:], key)
		clear(key)
		return nil
	}
	return fmt.Errorf("keychain: %s has unknown key derivation %d", f.path, f.hdr[5])
}

func passphrase(cfg FileConfig, getenv func(string) string) ([]byte, error) {
	if p := getenv(EnvPassphrase); p != "" {
		return []byte(p), nil
	}
	if cfg.Passphrase == nil {
		return nil, fmt.Errorf("%w: %w", ErrNoPassphrase, secrets.ErrUnavailable)
	}
	p, err := cfg.Passphrase()
	if err != nil {
		return nil, fmt.Errorf("keychain: read passphrase: %w", err)
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("%w: the passphrase is empty", ErrNoPassphrase)
	}
	return p, nil
}

func keyCheck(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("warden keyring key check v1"))
	return m.Sum(nil)[:checkLen]
}

// readKeyFile reads a 32-byte key, raw or as 64 hex digits, from a private
// regular file.
func readKeyFile(path string) ([]byte, error) {
	if err := checkPrivate(path, false); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path) //nolint:gosec // G304: the configured key file, checked private above
	if err != nil {
		return nil, fmt.Errorf("keychain: read key file: %w", err)
	}
	defer clear(b)
	if len(b) == chacha20poly1305.KeySize {
		return append([]byte(nil), b...), nil
	}
	t := bytes.TrimFunc(b, unicode.IsSpace)
	if len(t) == 2*chacha20poly1305.KeySize {
		key := make([]byte, chacha20poly1305.KeySize)
		if _, err := hex.Decode(key, t); err == nil {
			return key, nil
		}
	}
	return nil, fmt.Errorf("keychain: key file %s must hold 32 bytes or 64 hex digits", path)
}

// GenerateKeyFile writes a new random key, as 64 hex digits, to a new 0600
// file. It fails if path exists.
func GenerateKeyFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keychain: %w", err)
	}
	var key [chacha20poly1305.KeySize]byte
	if _, err := rand.Read(key[:]); err != nil {
		return fmt.Errorf("keychain: %w", err)
	}
	buf := make([]byte, hex.EncodedLen(len(key))+1)
	hex.Encode(buf, key[:])
	buf[len(buf)-1] = '\n'
	defer clear(buf)
	clear(key[:])
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: a new key file the caller names
	if err != nil {
		return fmt.Errorf("keychain: create key file: %w", err)
	}
	if _, err := fh.Write(buf); err != nil {
		fh.Close()
		return fmt.Errorf("keychain: write key file: %w", err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("keychain: write key file: %w", err)
	}
	return nil
}

// writeAtomic replaces path with data, 0600.
func writeAtomic(path string, data []byte) error {
	if err := fsutil.WriteFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("keychain: %w", err)
	}
	return nil
}

func (st *store) wipe() {
	for _, accts := range st.Services {
		for _, v := range accts {
			clear(v)
		}
	}
}
