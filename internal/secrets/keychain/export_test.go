package keychain

// Keep scrypt cheap in tests; the format records the cost, so files stay
// readable.
func init() { scryptLogN = 10 }
