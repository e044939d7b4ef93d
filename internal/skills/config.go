package skills

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// CheckConfig validates config values against the manifest's config
// fields: every key must be declared and every value must fit its type,
// choices and pattern. Missing required fields are not checked here; see
// [EffectiveConfig].
func CheckConfig(m *Manifest, values map[string]string) error {
	specs := configSpecs(m)
	for _, k := range slices.Sorted(maps.Keys(values)) {
		spec, ok := specs[k]
		if !ok {
			return &ConfigError{Skill: m.Name, Field: k, Msg: "not declared in the manifest"}
		}
		if msg := checkSpecValue(spec, values[k]); msg != "" {
			return &ConfigError{Skill: m.Name, Field: k, Msg: msg}
		}
	}
	return nil
}

// EffectiveConfig returns the config the sidecar gets: for each declared
// field, the stored value, else $default_from_env (if getenv is not nil
// and the variable is set), else the default. Every value is validated,
// and a required field without a value is a [*ConfigError].
func EffectiveConfig(m *Manifest, stored map[string]string, getenv func(string) string) (map[string]string, error) {
	if err := CheckConfig(m, stored); err != nil {
		return nil, err
	}
	out := map[string]string{}
	if m.Sidecar == nil {
		return out, nil
	}
	for _, c := range m.Sidecar.Config {
		v, ok := stored[c.Name]
		if !ok && getenv != nil && c.DefaultFromEnv != "" {
			if ev := getenv(c.DefaultFromEnv); ev != "" {
				v, ok = ev, true
			}
		}
		if !ok && c.Default != nil {
			v, ok = *c.Default, true
		}
		if !ok {
			if c.Required {
				return nil, &ConfigError{Skill: m.Name, Field: c.Name, Msg: "required but not set"}
			}
			continue
		}
		if msg := checkSpecValue(c, v); msg != "" {
			return nil, &ConfigError{Skill: m.Name, Field: c.Name, Msg: msg}
		}
		out[c.Name] = v
	}
	return out, nil
}

func configSpecs(m *Manifest) map[string]ConfigSpec {
	specs := map[string]ConfigSpec{}
	if m.Sidecar != nil {
		for _, c := range m.Sidecar.Config {
			specs[c.Name] = c
		}
	}
	return specs
}

func checkSpecValue(c ConfigSpec, v string) string {
	typ := c.Type
	if typ == "" {
		typ = TypeString
	}
	var re *regexp.Regexp
	if c.Pattern != "" && typ == TypeString {
		var err error
		if re, err = regexp.Compile(c.Pattern); err != nil {
			return "pattern does not compile"
		}
	}
	if msg := checkValue(typ, slices.Clip(c.Choices), re, v); msg != "" {
		return fmt.Sprint("value ", msg)
	}
	return ""
}
