package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/mcp"
)

// bearerTransport sets the Authorization header on every request, as an MCP
// client configured with a header does.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectGoSDK(ctx context.Context, tb *testBundle, key string) (*sdk.ClientSession, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "conclave-test", Version: "1"}, nil)
	return client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:   tb.base + mcp.Path,
		HTTPClient: &http.Client{Transport: bearerTransport{key: key}},
		MaxRetries: -1,
	}, nil)
}

// The official Go SDK client connects with a bearer header (probing
// server/discover first and falling back to initialize), lists the tools,
// calls deliberate and list_engines, gets -32602 for an unknown tool and
// "Unauthorized" without a key, and reads the protected-resource document
// with its discovery helper from the 401 challenge.
func TestGoSDKClient(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cs, err := connectGoSDK(ctx, tb, tb.key)
	require.NoError(t, err)
	defer cs.Close()
	require.Equal(t, "conclave", cs.InitializeResult().ServerInfo.Name)

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		require.NotNil(t, tl.Annotations, tl.Name)
	}
	require.Equal(t, []string{"deliberate", "estimate", "list_modes", "get_receipt", "list_engines",
		"validate_mode", "save_mode", "list_mode"}, names)

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "deliberate",
		Arguments: map[string]any{"model": "conclave-standard", "messages": messages(question)}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	var comp struct {
		Object string `json:"object"`
		Panel  struct {
			RequestID string  `json:"request_id"`
			BilledUSD float64 `json:"billed_usd"`
		} `json:"panel"`
	}
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(structured, &comp))
	require.Equal(t, "chat.completion", comp.Object)
	require.Greater(t, comp.Panel.BilledUSD, 0.0)
	require.JSONEq(t, string(structured), res.Content[0].(*sdk.TextContent).Text)

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_engines", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, `"engines"`)

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "estimate", Arguments: map[string]any{"messages": messages(question)}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, `"invalid_model"`)

	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool"})
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Equal(t, int64(-32602), rpcErr.Code)

	_, err = connectGoSDK(ctx, tb, "")
	require.ErrorContains(t, err, "Unauthorized")

	// Discovery: the 401 challenge names the metadata, which names the
	// resource exactly as the client reached it.
	r := tb.post(t, mcp.Path, "", initialize)
	require.Equal(t, http.StatusUnauthorized, r.status)
	challenges, err := oauthex.ParseWWWAuthenticate(r.header.Values("WWW-Authenticate"))
	require.NoError(t, err)
	require.Len(t, challenges, 1)
	require.Equal(t, "bearer", challenges[0].Scheme)
	metaURL := challenges[0].Params["resource_metadata"]
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, metaURL, tb.base+mcp.Path, http.DefaultClient)
	require.NoError(t, err)
	require.Equal(t, tb.base+"/mcp", prm.Resource)
	require.Equal(t, []string{issuer}, prm.AuthorizationServers)
}
