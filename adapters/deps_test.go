package adapters_test

import (
	"slices"
	"testing"

	"github.com/conclavehq/conclave/internal/deptest"
)

// exampleCarriers are the example adapters' carrier packages
// (adapters/example/<name>/wasm and goplugin): the main packages that
// serve a translator as a plugin, as a third-party author's would.
const exampleCarriers = "adapters/example/*/*"

// TestAdapterImportRule enforces that adapters are pure translators: they
// import core and adapters/internal, never plugins, storage, the policy
// engine, api, mcp or the wiring.
func TestAdapterImportRule(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.Rule{
		Packages:  "adapters",
		Except:    []string{exampleCarriers},
		Only:      []string{"core", "adapters"},
		Forbidden: slices.Concat(deptest.Storage, deptest.PolicyEngine, deptest.PluginRuntimes),
	})
}

// TestExampleCarrierImportRule lets the example carriers add the guest side
// of the plugin protocol (plugins/wasmguest, plugins/goplugin and the ABI
// and manifest those use) to the translator they serve, and nothing of the
// host: no wasmhost, egress, providers or byok.
func TestExampleCarrierImportRule(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.Rule{
		Packages: exampleCarriers,
		Only: []string{"core", "adapters",
			"plugins/wasmguest", "plugins/goplugin", "plugins/abi", "plugins/manifest"},
		Forbidden: slices.Concat(deptest.Storage, deptest.PolicyEngine, []string{"github.com/tetratelabs/wazero"}),
	})
}
