// Package adapters names the built-in provider adapters — the translators
// compiled into the binary (the native carrier) — so that configuration can
// refer to them by name: "openai", "anthropic", "gemini" and "bedrock".
// The adapters themselves live in the subpackages of the same names.
package adapters

import (
	"github.com/conclavehq/conclave/adapters/anthropic"
	"github.com/conclavehq/conclave/adapters/bedrock"
	"github.com/conclavehq/conclave/adapters/gemini"
	"github.com/conclavehq/conclave/adapters/openai"
	"github.com/conclavehq/conclave/core"
)

// builtins is sorted by name. Adapters are stateless, so one value of each
// serves every caller.
var builtins = []struct {
	name    string
	adapter core.Adapter
}{
	{"anthropic", anthropic.New()},
	{"bedrock", bedrock.New()},
	{"gemini", gemini.New()},
	{"openai", openai.New()},
}

// Builtin returns the built-in adapter called name, and whether there is one.
// The adapter is safe for concurrent use.
func Builtin(name string) (core.Adapter, bool) {
	for _, b := range builtins {
		if b.name == name {
			return b.adapter, true
		}
	}
	return nil, false
}

// BuiltinNames lists the built-in adapters' names, sorted. The slice is the
// caller's to keep.
func BuiltinNames() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}
