package api_test

import (
	"slices"
	"testing"

	"github.com/conclavehq/conclave/internal/deptest"
)

// TestCarrierImportRule enforces the carriers' layering: api (REST) and
// mcp (JSON-RPC) import only core and their own helpers — never storage,
// the policy engine, plugins, adapters or the wiring — plus the HTTP and
// metrics libraries they render with. The mcp rule is stated here, beside
// api's, because mcp/ has no Go package yet; it applies as soon as it has.
func TestCarrierImportRule(t *testing.T) {
	t.Parallel()
	forbidden := slices.Concat(deptest.Storage, deptest.PolicyEngine, deptest.PluginRuntimes)
	deptest.Check(t, deptest.Rule{Packages: "api", Only: []string{"core", "api"}, Forbidden: forbidden})
	deptest.Check(t, deptest.Rule{Packages: "mcp", Only: []string{"core", "mcp"}, Forbidden: forbidden, Planned: true})
}
