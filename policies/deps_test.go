package policies_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/deptest"
)

// TestPoliciesImportRule enforces that the policies and their evaluator
// import only core and OPA: no storage, plugins, adapters, carriers or
// wiring.
func TestPoliciesImportRule(t *testing.T) {
	t.Parallel()
	n := deptest.Check(t, deptest.Rule{
		Packages:  "policies",
		Only:      []string{"core", "policies"},
		Forbidden: slices.Concat(deptest.Storage, deptest.PluginRuntimes, []string{"github.com/go-chi/chi"}),
	})
	require.Positive(t, n, "the rule covers policies")
}
