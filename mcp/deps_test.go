package mcp_test

import (
	"slices"
	"testing"

	"github.com/conclavehq/conclave/internal/deptest"
)

// TestCarrierImportRule enforces the tool server's layering: mcp imports
// only core (the services it calls and the forms it shares with REST) and
// the standard library — never the REST carrier, storage, the policy
// engine, plugins or the wiring.
func TestCarrierImportRule(t *testing.T) {
	t.Parallel()
	forbidden := slices.Concat(deptest.Storage, deptest.PolicyEngine, deptest.PluginRuntimes,
		[]string{deptest.Module + "/api", deptest.Module + "/internal", deptest.Module + "/plugins", deptest.Module + "/cmd"})
	deptest.Check(t, deptest.Rule{Packages: "mcp", Only: []string{"core", "mcp"}, Forbidden: forbidden})
}
