package policy

import (
	_ "embed"
	"sync"
)

//go:embed builtin.yaml
var builtinYAML []byte

var builtinOnce = sync.OnceValues(func() (*File, error) { return Parse("builtin", builtinYAML) })

// Builtin returns the built-in default policy layer, with its profiles.
func Builtin() *File {
	f, err := builtinOnce()
	if err != nil {
		panic("policy: built-in policy does not parse: " + err.Error()) // programmer error, caught by tests
	}
	return f
}

// BuiltinYAML returns the text of the built-in defaults.
func BuiltinYAML() []byte { return builtinYAML }
