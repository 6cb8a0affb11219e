package pgstore_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// A name too long for the index of names (which only a policy without the
// name rules lets reach the store) is name_too_long, a 400 naming the
// field, not a failure of the store: for a new mode and for a new draft.
func TestNameTooLongForTheIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgstore.New(pgtest.NewPool(t))
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(6, 0))
	long := make([]byte, 6000)
	for i := range long {
		long[i] = byte('a' + r.IntN(26))
	}
	spec := []byte(`{"name":"Review Panel","ticker":"PANL"}`)

	_, err = s.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: org.ID, Name: string(long), Ticker: "LONG", Spec: spec})
	e := core.AsError(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, core.CodeNameTooLong, e.Code)
	require.Equal(t, "name", e.Param)

	m, err := s.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: org.ID, Name: "Review Panel", Ticker: "PANL", Spec: spec})
	require.NoError(t, err)
	_, err = s.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: org.ID, ModeID: m.ID, Name: string(long), Ticker: "PANL",
		Spec: spec, BaseRevision: m.DraftRevision})
	e = core.AsError(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, core.CodeNameTooLong, e.Code)
}
