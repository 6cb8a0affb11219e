package adapters_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters"
	"github.com/conclavehq/conclave/core/adaptertest"
)

func TestBuiltin(t *testing.T) {
	t.Parallel()
	names := adapters.BuiltinNames()
	require.Equal(t, []string{"anthropic", "bedrock", "gemini", "openai"}, names)
	require.True(t, slices.IsSorted(names))
	for _, name := range names {
		a, ok := adapters.Builtin(name)
		require.True(t, ok, name)
		info, err := a.Describe(t.Context())
		require.NoError(t, err)
		require.Equal(t, name, info.Name, "a built-in adapter is registered under its own name")
	}
	_, ok := adapters.Builtin("sim")
	require.False(t, ok)
	_, ok = adapters.Builtin("")
	require.False(t, ok)

	names[0] = "changed"
	require.Equal(t, "anthropic", adapters.BuiltinNames()[0], "BuiltinNames returns a fresh slice")
}

// TestEveryBuiltinHasFixtures keeps the registry and the conformance
// fixtures in step: each built-in adapter runs the suite from its package.
func TestEveryBuiltinHasFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range adapters.BuiltinNames() {
		require.Contains(t, adaptertest.Names(), name)
	}
}
