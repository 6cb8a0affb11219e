package mcp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ from the server's answers")

// The tools/list answer is the machine description of the tools (the
// OpenAPI document's counterpart): a change to a name, a schema, an
// annotation or a description shows in testdata/tools_list.golden.json,
// which `go test ./mcp -run TestToolsListGolden -update` rewrites.
func TestToolsListGolden(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	r := tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var got bytes.Buffer
	require.NoError(t, json.Indent(&got, r.rpc(t).Result, "", "  "))
	got.WriteByte('\n')
	path := filepath.Join("testdata", "tools_list.golden.json")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write the golden file")
	require.Equal(t, string(want), got.String(), "tools/list changed: review it, then run with -update")
}
