package goplugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/adaptertest"
	"github.com/conclavehq/conclave/core/protocoltest"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
)

// TestBuiltinAdapters runs the adapter conformance suite against each
// built-in adapter loaded through this carrier, from its plugin main in
// plugins/builtin/goplugin.
func TestBuiltinAdapters(t *testing.T) {
	t.Parallel()
	b := setup(t, goplugin.Config{})
	for _, name := range []string{"openai", "anthropic", "gemini", "bedrock"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, err := b.host.LoadAdapter(t.Context(), entry(t, name, name+"-goplugin", manifest.KindAdapter))
			require.NoError(t, err)
			adaptertest.Run(t, name, a)
		})
	}
}

// TestBuiltinProtocols runs the protocol conformance suite against each
// built-in judging protocol loaded through this carrier.
func TestBuiltinProtocols(t *testing.T) {
	t.Parallel()
	b := setup(t, goplugin.Config{})
	for _, name := range []string{"direct", "pairwise", "plurality"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := b.host.LoadProtocol(t.Context(), entry(t, name, name+"-goplugin", manifest.KindProtocol))
			require.NoError(t, err)
			protocoltest.Run(t, name, p)
		})
	}
}
