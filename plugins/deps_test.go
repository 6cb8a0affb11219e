package plugins_test

import (
	"slices"
	"testing"

	"github.com/conclavehq/conclave/internal/deptest"
)

// TestPluginsImportRule enforces that plugins, host and guest side, never
// reach the carriers (api, mcp), the wiring (cmd) or storage: the egress
// layer and the BYOK lookup read what they need through core's interfaces
// (core.Credentials, core.ProviderCredentials), which cmd plugs in.
func TestPluginsImportRule(t *testing.T) {
	t.Parallel()
	m := deptest.Module + "/"
	deptest.Check(t, deptest.Rule{
		Packages:  "plugins",
		Forbidden: slices.Concat([]string{m + "api", m + "mcp", m + "cmd", m + "internal/pgstore"}, deptest.Storage),
	})
}
