package api_test

import (
	"slices"
	"testing"

	"github.com/conclavehq/conclave/internal/deptest"
)

// TestCarrierImportRule enforces the REST carrier's layering: api imports
// only core and its own helpers — never storage, the policy engine,
// plugins, adapters or the wiring — plus the HTTP and metrics libraries it
// renders with. mcp/deps_test.go states the tool server's rule.
func TestCarrierImportRule(t *testing.T) {
	t.Parallel()
	forbidden := slices.Concat(deptest.Storage, deptest.PolicyEngine, deptest.PluginRuntimes)
	deptest.Check(t, deptest.Rule{Packages: "api", Only: []string{"core", "api"}, Forbidden: forbidden})
}
