package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// serve mounts the MCP tool server beside REST on the public listener,
// naming the configured public URL (never the request's host) as its
// resource, and the REST API still answers.
func TestServeMountsTheToolServer(t *testing.T) {
	t.Parallel()
	const public = "https://conclave.example/gw"
	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + pgtest.NewEmptyDatabase(t), "CONCLAVE_PUBLIC_URL=" + public}, "--demo")
	defer p.stop(t)
	key := p.demoKey(t) // printed after the serving line: waited for

	status, body := get(t, p.base+"/.well-known/oauth-protected-resource/mcp", "")
	require.Equal(t, http.StatusOK, status, body)
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.Equal(t, public+"/mcp", doc.Resource)
	require.Equal(t, []string{public}, doc.AuthorizationServers, "no issuer configured: the public URL")

	post := func(key string) (*http.Response, string) {
		return send(t, "POST", p.base+"/mcp", key,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	}
	res, body := post("")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
	require.Equal(t, `Bearer resource_metadata="`+public+`/.well-known/oauth-protected-resource/mcp", scope="`+
		strings.Join(core.AllScopes, " ")+`"`, res.Header.Get("WWW-Authenticate"))
	res, body = post(key)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, `"protocolVersion":"2025-06-18"`)
	require.True(t, strings.HasPrefix(res.Header.Get("X-Request-Id"), "req_"), "/mcp answers carry X-Request-Id")
	// /mcp is counted in REST's series on the operator listener, and
	// logged as REST is: just after its answer is sent.
	op := p.operatorBase(t)
	require.Eventually(t, func() bool {
		status, body := get(t, op+"/metrics", "")
		return status == http.StatusOK &&
			strings.Contains(body, `conclave_http_requests_total{code="ok",route="/mcp",status="200"} 1`) &&
			strings.Contains(body, `conclave_http_requests_total{code="invalid_api_key",route="/mcp",status="401"} 1`) &&
			strings.Contains(p.stderr.String(), `"route":"/mcp"`)
	}, 10*time.Second, 20*time.Millisecond, "the /mcp requests on the operator's metrics and in the log")

	status, body = get(t, p.base+"/v1/models", key)
	require.Equal(t, http.StatusOK, status, body)
	status, _ = get(t, p.base+"/mcp/other", key)
	require.Equal(t, http.StatusNotFound, status, "REST answers every other path")
}
