// Package secrets defines warden's redacting [Secret] type and the [Store]
// interface that keychain backends implement.
//
// A Secret never prints its value: every fmt verb, slog, encoding.TextMarshaler
// and json.Marshaler render it as "REDACTED". The raw bytes are reached only
// through [Secret.Reveal] or [Secret.RevealString], so a secret that reaches a
// log line, an error message or a JSON response by accident stays hidden.
package secrets
