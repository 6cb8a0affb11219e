package pgstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// The quotes' store: a quote reads back as made, only in its
// organisation; an approval is recorded once, before expiry, and keeps
// the quote approvable after it; a quote settles once, launched with its
// batch or used, and never moves back.
func TestGenieQuotes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgstore.New(pgtest.NewPool(t))
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Quotes"})
	require.NoError(t, err)
	other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Others"})
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Microsecond)
	newQuote := func() *genie.Quote {
		q := &genie.Quote{ID: core.NewID("qt"), OrgID: org.ID, Payer: "key:k1", Kind: runs.KindTest,
			Request: json.RawMessage(`{"model": "acme-panl", "buckets": {"medium": 2}}`), Model: "acme-panl", Price: 228_672,
			Questions: 2, Minutes: 3, Status: genie.QuoteOpen, CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute)}
		require.NoError(t, s.CreateQuote(ctx, q))
		return q
	}
	q := newQuote()
	got, err := s.Quote(ctx, org.ID, q.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(q.Request), string(got.Request))
	got.Request = q.Request
	got.CreatedAt, got.ExpiresAt = got.CreatedAt.UTC(), got.ExpiresAt.UTC()
	require.Equal(t, q, got)
	_, err = s.Quote(ctx, other.ID, q.ID)
	require.ErrorIs(t, err, core.ErrNotFound, "another organisation's")
	_, err = s.ApproveQuote(ctx, other.ID, q.ID, now)
	require.ErrorIs(t, err, core.ErrNotFound)
	require.ErrorIs(t, s.SettleQuote(ctx, other.ID, q.ID, genie.QuoteUsed, ""), core.ErrNotFound)
	require.ErrorIs(t, s.CreateQuote(ctx, &genie.Quote{ID: core.NewID("qt"), OrgID: "org_none", Kind: runs.KindTest,
		Request: json.RawMessage(`{}`), ExpiresAt: now}), core.ErrNotFound, "an organisation that does not exist")

	// Approved once, before expiry; approving again keeps the first time,
	// even past the expiry.
	a, err := s.ApproveQuote(ctx, org.ID, q.ID, now.Add(time.Minute))
	require.NoError(t, err)
	require.WithinDuration(t, now.Add(time.Minute), a.ApprovedAt, time.Millisecond)
	a, err = s.ApproveQuote(ctx, org.ID, q.ID, now.Add(time.Hour))
	require.NoError(t, err)
	require.WithinDuration(t, now.Add(time.Minute), a.ApprovedAt, time.Millisecond)
	require.Equal(t, genie.QuoteOpen, a.StatusAt(now.Add(time.Hour)), "an approved quote does not expire")

	late := newQuote()
	a, err = s.ApproveQuote(ctx, org.ID, late.ID, now.Add(16*time.Minute))
	require.NoError(t, err)
	require.True(t, a.ApprovedAt.IsZero(), "past its expiry: not approved")
	require.Equal(t, genie.QuoteExpired, a.StatusAt(now.Add(16*time.Minute)))

	// Settled once.
	batch := "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
	require.NoError(t, s.SettleQuote(ctx, org.ID, q.ID, genie.QuoteLaunched, batch))
	require.NoError(t, s.SettleQuote(ctx, org.ID, q.ID, genie.QuoteUsed, ""), "a launched quote is left as it is")
	got, err = s.Quote(ctx, org.ID, q.ID)
	require.NoError(t, err)
	require.Equal(t, genie.QuoteLaunched, got.Status)
	require.Equal(t, batch, got.BatchID)
	a, err = s.ApproveQuote(ctx, org.ID, q.ID, now)
	require.NoError(t, err)
	require.Equal(t, genie.QuoteLaunched, a.Status, "an approval of a launched quote reads it as it stands")
	require.Error(t, s.SettleQuote(ctx, org.ID, late.ID, genie.QuoteLaunched, ""), "launched needs its batch")

	used := newQuote()
	require.NoError(t, s.SettleQuote(ctx, org.ID, used.ID, genie.QuoteUsed, ""))
	require.NoError(t, s.SettleQuote(ctx, org.ID, used.ID, genie.QuoteLaunched, batch))
	got, err = s.Quote(ctx, org.ID, used.ID)
	require.NoError(t, err)
	require.Equal(t, genie.QuoteUsed, got.Status, "never moves back")
	require.Empty(t, got.BatchID)
}

// The conversations' store: one per organisation, payer and mode; the
// newest turns read oldest first; the reap deletes by age.
func TestGenieHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgstore.New(pgtest.NewPool(t))
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "History"})
	require.NoError(t, err)
	now := time.Now()
	var turns []genie.Turn
	for i := range 5 {
		turns = append(turns, genie.Turn{Role: []string{"user", "assistant"}[i%2], Content: string(rune('a' + i)),
			At: now.Add(time.Duration(i-5) * time.Hour)})
	}
	require.NoError(t, s.AppendTurns(ctx, org.ID, "key:k1", "acme-panl", turns))
	require.NoError(t, s.AppendTurns(ctx, org.ID, "key:k2", "acme-panl", []genie.Turn{{Role: "user", Content: "k2"}}))
	require.NoError(t, s.AppendTurns(ctx, org.ID, "key:k1", "acme-othr", []genie.Turn{{Role: "user", Content: "othr"}}))
	require.NoError(t, s.AppendTurns(ctx, org.ID, "key:k1", "acme-panl", nil))

	got, err := s.Turns(ctx, org.ID, "key:k1", "acme-panl", 3)
	require.NoError(t, err)
	var contents []string
	for _, t := range got {
		contents = append(contents, t.Content)
	}
	require.Equal(t, []string{"c", "d", "e"}, contents, "the newest three, oldest first")
	require.Equal(t, "user", got[0].Role)
	got, err = s.Turns(ctx, org.ID, "key:k2", "acme-panl", 10)
	require.NoError(t, err)
	require.Len(t, got, 1, "never another key's")
	got, err = s.Turns(ctx, org.ID, "person:p1", "acme-panl", 10)
	require.NoError(t, err)
	require.Empty(t, got)
	require.ErrorIs(t, s.AppendTurns(ctx, "org_none", "key:k1", "acme-panl", []genie.Turn{{Role: "user", Content: "x"}}),
		core.ErrNotFound)

	n, err := s.ReapHistory(ctx, now.Add(-150*time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "a, b and c are older")
	got, err = s.Turns(ctx, org.ID, "key:k1", "acme-panl", 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
}
