// Package keychain implements [secrets.Store] backends:
//
//   - [Keyring] wraps github.com/zalando/go-keyring (the freedesktop Secret
//     Service on Linux, the macOS keychain, Windows Credential Manager) with
//     per-call timeouts and error classification into [secrets.ErrNotFound]
//     and [secrets.ErrUnavailable]. go-keyring cannot list, so each service
//     keeps a non-secret index entry (account "__index__") holding the JSON
//     list of account names.
//   - [File] is an encrypted file for headless Linux: XChaCha20-Poly1305
//     under a key derived with scrypt from a passphrase, or read from a 0600
//     key file; written atomically and guarded by flock.
//   - [Mock] keeps secrets in memory, for tests.
//
// [Open] picks a backend from [Config], WARDEN_KEYRING_BACKEND or, by
// default, the native keychain if it answers a ping and the encrypted file
// otherwise, with a warning the caller must show. There is never a silent
// plaintext fallback, and no error text carries a secret value.
package keychain
