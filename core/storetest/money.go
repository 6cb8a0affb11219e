package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// Books is what Money reads an organisation's money from; core.Store is
// one.
type Books interface {
	GetBalance(ctx context.Context, orgID string) (*core.Balance, error)
	ListPostings(ctx context.Context, orgID string) ([]*core.Posting, error)
}

// Money is an organisation's money as the store has it: its balance and
// its journal.
type Money struct {
	Balance  core.Micros
	Postings []*core.Posting
}

// MoneyOf reads orgID's money from s.
func MoneyOf(t testing.TB, s Books, orgID string) Money {
	t.Helper()
	b, err := s.GetBalance(context.Background(), orgID)
	require.NoError(t, err)
	ps, err := s.ListPostings(context.Background(), orgID)
	require.NoError(t, err)
	return Money{Balance: b.Balance, Postings: ps}
}

// RequireCharged checks that since before exactly one posting, of kind,
// moved amount from orgID's balance to revenue; a negative amount is a
// refund, from revenue back to the balance.
func RequireCharged(t testing.TB, s Books, orgID string, before Money, kind string, amount core.Micros) {
	t.Helper()
	now := MoneyOf(t, s, orgID)
	require.Equal(t, before.Balance-amount, now.Balance)
	require.Len(t, now.Postings, len(before.Postings)+1, "one posting")
	p := now.Postings[len(now.Postings)-1]
	require.Equal(t, kind, p.Kind)
	require.ElementsMatch(t, []core.Leg{
		{Account: core.AccountOrgBalance, OrgID: orgID, Amount: -amount},
		{Account: core.AccountRevenue, Amount: amount},
	}, p.Legs)
}
