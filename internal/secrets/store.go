package secrets

// Store is a keychain: secrets addressed by a service and an account name.
// Implementations live in package keychain.
type Store interface {
	// Get returns the secret, or an error wrapping ErrNotFound.
	Get(service, account string) (Secret, error)
	// Set creates or replaces the secret.
	Set(service, account string, s Secret) error
	// Delete removes the secret, or returns an error wrapping ErrNotFound.
	Delete(service, account string) error
	// List returns the sorted account names stored under service. An
	// unknown service yields an empty list, not an error.
	List(service string) ([]string, error)
	// Name names the backend, e.g. "secret-service" or "file".
	Name() string
}

// ServicePrefix starts every service name warden uses.
const ServicePrefix = "warden/"

// ServiceForSkill returns the keychain service that holds a skill's secrets.
func ServiceForSkill(skill string) string { return ServicePrefix + skill }
