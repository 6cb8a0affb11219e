package core_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/conclavehq/conclave"

// TestCoreImportRule enforces the layering: core and its subpackages import
// nothing from api, mcp, adapters, plugins, cmd or internal (storage), and
// none of the heavy libraries those use.
func TestCoreImportRule(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", module+"/core/...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	forbidden := []string{
		module + "/api", module + "/mcp", module + "/adapters", module + "/plugins", module + "/cmd", module + "/internal",
		"github.com/jackc/pgx", "github.com/go-chi/chi", "github.com/open-policy-agent/opa",
		"github.com/prometheus/client_golang", "github.com/tetratelabs/wazero", "github.com/hashicorp/go-plugin",
	}
	deps := strings.Fields(string(out))
	require.Greater(t, len(deps), 10, "go list returned the dependency graph")
	for _, dep := range deps {
		for _, f := range forbidden {
			require.Falsef(t, dep == f || strings.HasPrefix(dep, f+"/"), "core depends on %s", dep)
		}
	}
}

// TestEveryPackageHasADoc keeps a package comment on every package.
func TestEveryPackageHasADoc(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Doc}}", module+"/...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		require.Len(t, parts, 3, line)
		require.NotEmptyf(t, strings.TrimSpace(parts[2]), "package %s has no package doc comment", parts[0])
	}
}
