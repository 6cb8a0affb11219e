package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Content retention: with the organisation's transcripts switched off, the
// next call's receipt has no text even with include_transcript=true, and
// says so (transcript_kept: false); a retry with the call's
// Idempotency-Key still replays its answer; a call made before the switch
// keeps its text.
func TestReceiptWithoutTranscriptStillReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cb := setupChat(t, rolesMode("never", 1, 0))
	question := "Should we adopt trunk-based development?"

	before := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", question, ""), "Idempotency-Key", "before-1")
	require.Equal(t, 200, before.status, before.raw)
	beforeID := before.body["panel"].(map[string]any)["request_id"].(string)

	off, err := cb.store.SetOrgTranscripts(ctx, cb.org.ID, false)
	require.NoError(t, err)
	require.False(t, off.KeepTranscripts)

	first := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", question, ""), "Idempotency-Key", "after-1")
	require.Equal(t, 200, first.status, first.raw)
	id := first.body["panel"].(map[string]any)["request_id"].(string)
	answer := first.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	require.NotEmpty(t, answer)

	rec := requireReceipt(t, getReceipt(t, cb.testBundle, cb.key, id, "include_transcript=true"))
	require.Equal(t, false, rec["transcript_kept"], "the receipt says its text was not kept")
	require.NotContains(t, rec["best_seat"], "content")
	answered := 0
	for _, s := range entries(rec["seats"]) {
		require.NotContains(t, s, "content", "no seat's text")
		if s["answered"] == true {
			answered++
		}
	}
	require.Equal(t, 3, answered, "the seats still show they answered")
	for _, s := range entries(rec["staff"]) {
		require.NotContains(t, s, "content", "no staff call's text")
	}
	require.NotContains(t, getReceipt(t, cb.testBundle, cb.key, id, "include_transcript=true").raw, answer, "the answer is nowhere in the receipt")

	retry := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", question, ""), "Idempotency-Key", "after-1")
	requireReplay(t, retry, first)
	require.Equal(t, answer, retry.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"], "the retry gets its answer")

	kept := requireReceipt(t, getReceipt(t, cb.testBundle, cb.key, beforeID, "include_transcript=true"))
	require.Equal(t, true, kept["transcript_kept"])
	require.NotEmpty(t, kept["best_seat"].(map[string]any)["content"], "a call made before the switch keeps its text")
	plain := requireReceipt(t, getReceipt(t, cb.testBundle, cb.key, beforeID, ""))
	require.Equal(t, true, plain["transcript_kept"], "the field is there without the transcript too")
}
