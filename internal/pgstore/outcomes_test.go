package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

func TestOutcomesAreScopedToTheOrganisationAndFirstWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgstore.New(pgtest.NewPool(t))
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Outcomes"})
	require.NoError(t, err)
	other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Elsewhere"})
	require.NoError(t, err)

	before := time.Now().Add(-time.Minute)
	o := &core.CallOutcome{RequestID: "req_est", OrgID: org.ID, Endpoint: "/v1/estimate", Status: core.OutcomeEstimated, Reason: "an estimate"}
	require.NoError(t, s.RecordOutcome(ctx, o))
	got, err := s.GetOutcome(ctx, org.ID, "req_est")
	require.NoError(t, err)
	require.Equal(t, "req_est", got.RequestID)
	require.Equal(t, org.ID, got.OrgID)
	require.Equal(t, "/v1/estimate", got.Endpoint)
	require.Equal(t, core.OutcomeEstimated, got.Status)
	require.Equal(t, "an estimate", got.Reason)
	require.True(t, got.CreatedAt.After(before), "created_at %v", got.CreatedAt)

	// A second outcome for the same request changes nothing, even from
	// another organisation.
	require.NoError(t, s.RecordOutcome(ctx, &core.CallOutcome{RequestID: "req_est", OrgID: org.ID, Endpoint: "/v1/chat/completions", Status: core.OutcomeFailed, Reason: "later"}))
	require.NoError(t, s.RecordOutcome(ctx, &core.CallOutcome{RequestID: "req_est", OrgID: other.ID, Endpoint: "/v1/estimate", Status: core.OutcomeEstimated, Reason: "theirs"}))
	again, err := s.GetOutcome(ctx, org.ID, "req_est")
	require.NoError(t, err)
	require.Equal(t, got, again)

	_, err = s.GetOutcome(ctx, other.ID, "req_est")
	require.ErrorIs(t, err, core.ErrNotFound, "another organisation's outcome")
	_, err = s.GetOutcome(ctx, org.ID, "req_missing")
	require.ErrorIs(t, err, core.ErrNotFound)

	for name, bad := range map[string]*core.CallOutcome{
		"no request id": {OrgID: org.ID, Endpoint: "/v1/estimate", Status: "estimated", Reason: "r"},
		"no org":        {RequestID: "req_x", Endpoint: "/v1/estimate", Status: "estimated", Reason: "r"},
		"no status":     {RequestID: "req_x", OrgID: org.ID, Endpoint: "/v1/estimate", Reason: "r"},
		"no reason":     {RequestID: "req_x", OrgID: org.ID, Endpoint: "/v1/estimate", Status: "estimated"},
		"unknown org":   {RequestID: "req_x", OrgID: "org_missing", Endpoint: "/v1/estimate", Status: "estimated", Reason: "r"},
	} {
		require.Error(t, s.RecordOutcome(ctx, bad), name)
	}
	_, err = s.GetOutcome(ctx, org.ID, "req_x")
	require.ErrorIs(t, err, core.ErrNotFound, "no refused outcome was stored")
}
