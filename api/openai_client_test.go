package api_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// The official OpenAI Go client, with only the base URL changed, lists and
// retrieves modes and reads Conclave's errors.
func TestOpenAIClientListsAndRetrievesModes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	client := openai.NewClient(
		option.WithBaseURL(tb.srv.URL+"/v1/"),
		option.WithAPIKey(tb.key),
		option.WithMaxRetries(0),
	)

	page, err := client.Models.List(ctx)
	require.NoError(t, err)
	require.Len(t, page.Data, 2)
	byID := map[string]openai.Model{}
	for _, m := range page.Data {
		require.Equal(t, "conclave", string(m.OwnedBy))
		require.Equal(t, "model", string(m.Object))
		byID[m.ID] = m
	}
	std, ok := byID["conclave-standard"]
	require.True(t, ok)
	require.Contains(t, byID, "conclave-max")

	// The conclave block rides along as an extra field.
	extra, ok := std.JSON.ExtraFields["conclave"]
	require.True(t, ok, "conclave block present")
	require.Contains(t, extra.Raw(), `"q_surcharge_by_depth":{"deep":0.15,"light":0.05,"medium":0.1}`)
	require.Contains(t, extra.Raw(), `"mode_key":"standard"`)

	got, err := client.Models.Get(ctx, "CNCL:MAXX")
	require.NoError(t, err)
	require.Equal(t, "conclave-max", got.ID)

	_, err = client.Models.Get(ctx, "gpt-4o")
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "got %v", err)
	require.Equal(t, 404, apiErr.StatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
	require.Equal(t, "invalid_request_error", apiErr.Type)
	require.Equal(t, "model", apiErr.Param)

	bad := openai.NewClient(option.WithBaseURL(tb.srv.URL+"/v1/"), option.WithAPIKey("sk-not-ours"), option.WithMaxRetries(0))
	_, err = bad.Models.List(ctx)
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, 401, apiErr.StatusCode)
	require.Equal(t, "invalid_api_key", apiErr.Code)
}
