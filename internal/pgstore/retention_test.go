package pgstore_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// Content retention (0024): with the organisation's transcripts off, a
// receipt is written without its calls' and best seat's text, marked so,
// while the answer stored for replays is kept until the idempotency reaper
// deletes the call's claim; a receipt written before the switch keeps its
// text, and the reaper leaves a kept receipt's answer alone.
func TestReceiptsWithoutTranscripts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	require.True(t, org.KeepTranscripts, "transcripts are kept by default")

	settle := func(requestID string) *core.Receipt {
		t.Helper()
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: requestID, Amount: 100_000})
		require.NoError(t, err)
		r := benchReceipt(requestID)
		r.BestSeat = &core.BestSeat{ModelUsed: "sim/atlas", Content: "The best answer."}
		failed := r.Seats[0]
		failed.Content, failed.Attempt, failed.ErrorClass = "", core.AttemptFailed, "timeout"
		r.Seats = append(r.Seats, failed)
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r})
		require.NoError(t, err)
		claimHash := sha256.Sum256([]byte(requestID))
		_, err = pool.Exec(ctx, `INSERT INTO idempotency_keys (org_id, key, request_hash, request_id, state, locked_until, updated_at)
			VALUES ($1, $2, $3, $2, 'succeeded', now(), now() - interval '2 days')`, org.ID, requestID, claimHash[:])
		require.NoError(t, err)
		return r
	}
	settle("req_kept")

	off, err := s.SetOrgTranscripts(ctx, org.ID, false)
	require.NoError(t, err)
	require.False(t, off.KeepTranscripts)
	got, err := s.GetOrg(ctx, org.ID)
	require.NoError(t, err)
	require.False(t, got.KeepTranscripts)
	var audited int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = $2 AND detail LIKE 'transcripts not kept%'",
		org.ID, core.AuditOrgSettings).Scan(&audited))
	require.Equal(t, 1, audited)

	written := settle("req_dropped")
	dropped, err := s.GetReceipt(ctx, org.ID, "req_dropped")
	require.NoError(t, err)
	require.True(t, dropped.TranscriptDropped)
	require.Equal(t, "", dropped.BestSeat.Content)
	require.Equal(t, "sim/atlas", dropped.BestSeat.ModelUsed)
	require.Len(t, dropped.Seats, 2)
	require.Len(t, dropped.Staff, 2)
	for i, c := range append(dropped.Seats, dropped.Staff...) {
		require.Empty(t, c.Content, "call %d", i)
		require.Equal(t, c.Attempt != core.AttemptFailed, c.Answered, "call %d: answered as its text said", i)
	}
	require.Equal(t, written.Seats[0].TokensOut, dropped.Seats[0].TokensOut, "the figures are kept")
	require.JSONEq(t, string(written.Response), string(dropped.Response), "the answer for replays is kept")

	kept, err := s.GetReceipt(ctx, org.ID, "req_kept")
	require.NoError(t, err)
	require.False(t, kept.TranscriptDropped, "a receipt written before the switch keeps its text")
	require.Equal(t, "An answer of a few words.", kept.Seats[0].Content)
	require.Equal(t, "The best answer.", kept.BestSeat.Content)
	require.False(t, kept.Seats[0].Answered)

	n, err := s.ReapIdempotencyKeys(ctx, &pgstore.ReapParams{Retention: 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	dropped, err = s.GetReceipt(ctx, org.ID, "req_dropped")
	require.NoError(t, err)
	require.Nil(t, dropped.Response, "the reaper removes the answer kept only for replays")
	kept, err = s.GetReceipt(ctx, org.ID, "req_kept")
	require.NoError(t, err)
	require.NotNil(t, kept.Response, "a kept transcript's answer stays")

	on, err := s.SetOrgTranscripts(ctx, org.ID, true)
	require.NoError(t, err)
	require.True(t, on.KeepTranscripts)
	settle("req_again")
	again, err := s.GetReceipt(ctx, org.ID, "req_again")
	require.NoError(t, err)
	require.False(t, again.TranscriptDropped)
	require.Equal(t, "An answer of a few words.", again.Staff[0].Content)
}
