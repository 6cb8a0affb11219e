package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunOutcomes is the section of core.Outcomes: an outcome is recorded once
// (the first stands) and read by its own organisation only.
func RunOutcomes[S interface {
	core.Orgs
	core.Outcomes
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("FirstOutcomeStandsForItsOrganisationOnly", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Outcomes")
		other := createOrg(t, s, "Elsewhere")

		before := time.Now().Add(-time.Minute)
		require.NoError(t, s.RecordOutcome(ctx, &core.CallOutcome{
			RequestID: "req_est", OrgID: org.ID, Endpoint: "/v1/estimate",
			Status: core.OutcomeEstimated, Reason: "an estimate",
		}))
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
		require.NoError(t, s.RecordOutcome(ctx, &core.CallOutcome{
			RequestID: "req_est", OrgID: org.ID, Endpoint: "/v1/chat/completions",
			Status: core.OutcomeFailed, Reason: "later",
		}))
		require.NoError(t, s.RecordOutcome(ctx, &core.CallOutcome{
			RequestID: "req_est", OrgID: other.ID, Endpoint: "/v1/estimate",
			Status: core.OutcomeEstimated, Reason: "theirs",
		}))
		again, err := s.GetOutcome(ctx, org.ID, "req_est")
		require.NoError(t, err)
		require.Equal(t, got, again)

		_, err = s.GetOutcome(ctx, other.ID, "req_est")
		require.ErrorIs(t, err, core.ErrNotFound, "another organisation's outcome")
		_, err = s.GetOutcome(ctx, org.ID, "req_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("IncompleteOutcomesAreRefused", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Outcomes")
		valid := core.CallOutcome{
			RequestID: "req_x", OrgID: org.ID, Endpoint: "/v1/estimate",
			Status: core.OutcomeEstimated, Reason: "r",
		}
		for name, spoil := range map[string]func(o *core.CallOutcome){
			"no request id": func(o *core.CallOutcome) { o.RequestID = "" },
			"no org":        func(o *core.CallOutcome) { o.OrgID = "" },
			"no endpoint":   func(o *core.CallOutcome) { o.Endpoint = "" },
			"no status":     func(o *core.CallOutcome) { o.Status = "" },
			"no reason":     func(o *core.CallOutcome) { o.Reason = "" },
			"unknown org":   func(o *core.CallOutcome) { o.OrgID = "org_missing" },
		} {
			bad := valid
			spoil(&bad)
			require.Error(t, s.RecordOutcome(ctx, &bad), name)
		}
		_, err := s.GetOutcome(ctx, org.ID, "req_x")
		require.ErrorIs(t, err, core.ErrNotFound, "no refused outcome was stored")
	})
}
