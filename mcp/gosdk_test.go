package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
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

// sdkSession connects the official Go SDK client with key for the rest
// of the test, with a two-minute deadline.
func sdkSession(t *testing.T, tb *testBundle, key string) (context.Context, *sdk.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cs, err := connectGoSDK(ctx, tb, key)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return ctx, cs
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
	require.Equal(t, allTools, names)

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

// structured calls a tool through the Go SDK and decodes its structured
// content into v; the call must succeed.
func structured(ctx context.Context, t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, v any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %s", name, res.Content[0].(*sdk.TextContent).Text)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

// servedReceipt is what PostgreSQL's receipt of a call says ran and was
// billed: the mode, and by its mode_config_hash which version of it.
type servedReceipt struct {
	OrgID, ModeID, ConfigHash string
	Billed                    core.Micros
}

func (tb *testBundle) receipt(t *testing.T, requestID string) servedReceipt {
	t.Helper()
	var r servedReceipt
	require.NoError(t, tb.pool.QueryRow(context.Background(),
		`SELECT org_id, mode_id, mode_config_hash, billed_micros FROM receipts WHERE request_id = $1`, requestID).
		Scan(&r.OrgID, &r.ModeID, &r.ConfigHash, &r.Billed))
	return r
}

// A mode from spec to marketplace through the official Go SDK client: org
// A validates, saves and releases it and asks for its listing; the
// operator approves it (as `conclave listing approve` does); org B then
// finds it in list_modes and deliberates on it, billed — the receipt in
// PostgreSQL names the mode and its version's mode_config_hash, and the
// journal charges B — A releases a second version with other seats, whose
// mode_config_hash differs, and B keeps being served the published first
// version while A runs the second.
func TestGoSDKAuthorsAndListsAMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	acme, aKey := tb.newOrg(t, "Acme", "ACME")
	beta, bKey := tb.newOrg(t, "Beta", "BETA")
	a, err := connectGoSDK(ctx, tb, aKey)
	require.NoError(t, err)
	defer a.Close()
	b, err := connectGoSDK(ctx, tb, bKey)
	require.NoError(t, err)
	defer b.Close()

	spec := panelSpec("Acme Review Panel", "PANL")
	var v validated
	structured(ctx, t, a, "validate_mode", map[string]any{"spec": spec}, &v)
	require.True(t, v.OK, "%+v", v.Refusals)
	var v1 savedMode
	structured(ctx, t, a, "save_mode", map[string]any{"spec": spec, "release": true}, &v1)
	require.Equal(t, "acme-panl", v1.Mode.ID)
	require.Equal(t, 1, v1.Version.Version)
	require.Equal(t, *v.ModeConfigHash, v1.Version.ModeConfigHash)
	var listed struct {
		Mode authoredMode `json:"mode"`
	}
	structured(ctx, t, a, "list_mode", map[string]any{"mode_id": "acme-panl"}, &listed)
	require.Equal(t, "pending", listed.Mode.Listing.State)

	ask := func(cs *sdk.ClientSession, q string) (requestID string, billed float64) {
		t.Helper()
		var comp struct {
			Panel struct {
				RequestID string  `json:"request_id"`
				BilledUSD float64 `json:"billed_usd"`
			} `json:"panel"`
		}
		structured(ctx, t, cs, "deliberate", map[string]any{"model": "acme-panl", "messages": messages(q)}, &comp)
		return comp.Panel.RequestID, comp.Panel.BilledUSD
	}
	// Not yet published: B may not run it.
	res, err := b.CallTool(ctx, &sdk.CallToolParams{Name: "deliberate",
		Arguments: map[string]any{"model": "acme-panl", "messages": messages(question)}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, `"code":"mode_not_published"`)

	m, err := tb.store.AuthoredModeByRef(ctx, "acme-panl")
	require.NoError(t, err)
	_, err = tb.store.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, ListingRevision: m.ListingRevision,
		Version: m.LatestVersion})
	require.NoError(t, err)

	var models struct {
		Data []struct {
			ID       string `json:"id"`
			Conclave struct {
				Ticker         string `json:"ticker"`
				ModeConfigHash string `json:"mode_config_hash"`
			} `json:"conclave"`
		} `json:"data"`
	}
	structured(ctx, t, b, "list_modes", map[string]any{}, &models)
	found := false
	for _, e := range models.Data {
		if e.ID == "acme-panl" {
			found = true
			require.Equal(t, "ACME:PANL", e.Conclave.Ticker)
			require.Equal(t, v1.Version.ModeConfigHash, e.Conclave.ModeConfigHash)
		}
	}
	require.True(t, found, "B lists the published mode: %+v", models.Data)

	before, err := tb.store.GetBalance(ctx, beta.ID)
	require.NoError(t, err)
	reqID, billed := ask(b, question)
	require.Positive(t, billed)
	after, err := tb.store.GetBalance(ctx, beta.ID)
	require.NoError(t, err)
	rc := tb.receipt(t, reqID)
	require.Equal(t, servedReceipt{OrgID: beta.ID, ModeID: "acme-panl", ConfigHash: v1.Version.ModeConfigHash, Billed: usd(t, billed)}, rc)
	require.Equal(t, rc.Billed, before.Balance-after.Balance, "B's balance paid the receipt's bill")
	var charged core.Micros
	require.NoError(t, tb.pool.QueryRow(ctx, `SELECT coalesce(sum(l.amount_micros), 0) FROM postings p
		JOIN journal_legs l ON l.posting_id = p.id
		WHERE p.kind = 'call_charge' AND p.memo = 'call ' || $1 AND l.account = 'org_balance' AND l.org_id = $2`, reqID, beta.ID).
		Scan(&charged))
	require.Equal(t, -rc.Billed, charged, "the journal charged B's balance for the call")

	// A second version with other seats: another hash. The marketplace
	// still serves B the published first version; A runs its latest.
	var v2 savedMode
	structured(ctx, t, a, "save_mode", map[string]any{"spec": twoSeatPlus(panelSpec("Acme Review Panel", "PANL")),
		"mode_id": "acme-panl", "release": true}, &v2)
	require.Equal(t, 2, v2.Version.Version)
	require.NotEqual(t, v1.Version.ModeConfigHash, v2.Version.ModeConfigHash)
	require.Equal(t, 1, v2.Mode.PublishedVersion)

	reqID, _ = ask(b, "Should a small team pay down its test debt before adding features?")
	require.Equal(t, v1.Version.ModeConfigHash, tb.receipt(t, reqID).ConfigHash, "B runs the published version 1")
	reqID, _ = ask(a, "Should a small team pay down its test debt before adding features?")
	rc = tb.receipt(t, reqID)
	require.Equal(t, acme.ID, rc.OrgID)
	require.Equal(t, "acme-panl", rc.ModeID)
	require.Equal(t, v2.Version.ModeConfigHash, rc.ConfigHash, "A runs its latest version 2")
}

// A test run and a certification through the official Go SDK client: the
// client lists both tools, quotes a run, launches it with an idempotency
// key in _meta — its repeat answers the same batch, marked replayed in the
// result's _meta, and the journal in PostgreSQL holds one charge — polls
// it, and gets -32602 for a certify_mode call that neither launches nor
// polls and listing_required for an unlisted mode.
func TestGoSDKRunTools(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	org, key := tb.acmePanel(t)
	cs, err := connectGoSDK(ctx, tb, key)
	require.NoError(t, err)
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	schemas := map[string]any{}
	for _, tl := range list.Tools {
		schemas[tl.Name] = tl.OutputSchema
	}
	require.Contains(t, schemas, "run_test")
	require.Contains(t, schemas, "certify_mode")

	args := map[string]any{"model": "ACME:PANL", "questions": map[string]any{"easy": 1, "hard": 2}, "tiers": []string{"free", "plus"}}
	var quote acceptance
	structured(ctx, t, cs, "run_test", map[string]any{"model": "ACME:PANL", "questions": map[string]any{"easy": 1, "hard": 2},
		"tiers": []string{"free", "plus"}, "dry_run": true}, &quote)
	require.True(t, quote.DryRun)
	require.Equal(t, 6, quote.TotalQuestions, "each question at each tier")
	// A question's price at its tier (api/runs_test.go's runsBundle works
	// them out): light $0.065102 at free and $0.076836 at plus, hard
	// $0.159081 and $0.182548.
	require.InDelta(t, 0.065102+0.076836+2*0.159081+2*0.182548, *quote.TotalCostUSD, 1e-9)
	require.Equal(t, map[string]any{"questions": 2.0, "cost_usd": 0.141938, "per_tier": map[string]any{
		"experience": map[string]any{"questions": 1.0, "price_per_question_usd": 0.065102, "cost_usd": 0.065102},
		"plus":       map[string]any{"questions": 1.0, "price_per_question_usd": 0.076836, "cost_usd": 0.076836},
	}}, quote.PerBucket["light"], "each tier's price")

	call := &sdk.CallToolParams{Name: "run_test", Arguments: args, Meta: sdk.Meta{"conclave/idempotency-key": "sdk-run-1"}}
	first, err := cs.CallTool(ctx, call)
	require.NoError(t, err)
	require.False(t, first.IsError, first.Content[0].(*sdk.TextContent).Text)
	require.Empty(t, first.Meta)
	var launched acceptance
	require.NoError(t, json.Unmarshal([]byte(first.Content[0].(*sdk.TextContent).Text), &launched))
	require.Equal(t, quote.TotalCostUSD, launched.BilledUSD)
	again, err := cs.CallTool(ctx, call)
	require.NoError(t, err)
	require.Equal(t, true, again.Meta["conclave/idempotent-replayed"])
	require.JSONEq(t, first.Content[0].(*sdk.TextContent).Text, again.Content[0].(*sdk.TextContent).Text)

	var charges int
	var charged core.Micros
	require.NoError(t, tb.pool.QueryRow(ctx, `SELECT count(DISTINCT p.id), coalesce(sum(l.amount_micros), 0) FROM postings p
		JOIN journal_legs l ON l.posting_id = p.id
		WHERE p.kind = 'test_charge' AND l.account = 'org_balance' AND l.org_id = $1`, org.ID).Scan(&charges, &charged))
	require.Equal(t, 1, charges, "one charge for the launch and its repeat")
	require.Equal(t, -usd(t, *launched.BilledUSD), charged)

	var polled struct {
		OK    bool `json:"ok"`
		Batch struct {
			ID       string         `json:"id"`
			Status   string         `json:"status"`
			Progress map[string]int `json:"progress"`
		} `json:"batch"`
	}
	structured(ctx, t, cs, "run_test", map[string]any{"batch_id": launched.BatchID}, &polled)
	require.True(t, polled.OK)
	require.Equal(t, launched.BatchID, polled.Batch.ID)
	require.Equal(t, "queued", polled.Batch.Status)
	require.Equal(t, 6, polled.Batch.Progress["total"])

	// Cancelled over REST, the batch polls as cancelled, refunded in full,
	// and the poll's answer still fits the tool's declared outputSchema,
	// which clients such as the TypeScript SDK check.
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, tb.base+"/v1/tests?batch_id="+launched.BatchID, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_test", Arguments: map[string]any{"batch_id": launched.BatchID}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	requireFitsSchema(t, schemas["run_test"], res.StructuredContent)
	var cancelled struct {
		Batch struct {
			Status      string         `json:"status"`
			Progress    map[string]int `json:"progress"`
			RefundedUSD float64        `json:"refunded_usd"`
		} `json:"batch"`
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cancelled))
	require.Equal(t, "cancelled", cancelled.Batch.Status)
	require.Equal(t, 6, cancelled.Batch.Progress["cancelled"])
	require.InDelta(t, *launched.BilledUSD, cancelled.Batch.RefundedUSD, 1e-9)

	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "certify_mode", Arguments: map[string]any{"dry_run": true}})
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Equal(t, int64(-32602), rpcErr.Code)
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "certify_mode", Arguments: map[string]any{"model": "acme-panl"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, `"code":"listing_required"`)
	var quoted acceptance
	structured(ctx, t, cs, "certify_mode", map[string]any{"model": "acme-panl", "dry_run": true}, &quoted)
	require.True(t, *quoted.RequiresListing)
}

// requireFitsSchema checks that v validates against the JSON Schema schema
// (a tool's outputSchema as a client lists it).
func requireFitsSchema(t *testing.T, schema, v any) {
	t.Helper()
	raw, err := json.Marshal(schema)
	require.NoError(t, err)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(raw, &s))
	resolved, err := s.Resolve(nil)
	require.NoError(t, err)
	require.NoError(t, resolved.Validate(v))
}
