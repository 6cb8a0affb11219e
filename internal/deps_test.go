package internal_test

import (
	"testing"

	"github.com/conclavehq/conclave/internal/deptest"
)

// TestStorageImportRule enforces that only the wiring (cmd) and the
// storage side — pgstore itself, the River workers that run on its driver
// and pgtest, which builds the test databases — import pgstore; everything
// else reaches storage through core's store interfaces.
func TestStorageImportRule(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.Rule{
		Packages:  ".",
		Except:    []string{"cmd", "internal/pgstore", "internal/jobs", "internal/pgtest"},
		Forbidden: []string{deptest.Module + "/internal/pgstore"},
	})
}

// TestInternalImportRule enforces that internal/ sits below the carriers,
// the wiring and the plugin hosts: nothing in it imports api, mcp, cmd or
// any plugins package. Storage in particular stores core's types
// (core.ProviderCredential for bring-your-own-key), never a plugin's.
func TestInternalImportRule(t *testing.T) {
	t.Parallel()
	m := deptest.Module + "/"
	deptest.Check(t, deptest.Rule{
		Packages:  "internal",
		Forbidden: []string{m + "api", m + "mcp", m + "cmd", m + "plugins"},
	})
}
