package policies_test

import (
	"slices"
	"testing"

	"github.com/conclavehq/conclave/internal/deptest"
)

// TestPoliciesImportRule enforces that the policies and their evaluator
// import only core and OPA: no storage, plugins, adapters, carriers or
// wiring.
func TestPoliciesImportRule(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.Rule{
		Packages:  "policies",
		Only:      []string{"core", "policies"},
		Forbidden: slices.Concat(deptest.Storage, deptest.PluginRuntimes, []string{"github.com/go-chi/chi"}),
	})
}
