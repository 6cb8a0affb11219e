// Package storetest is the conformance suite for core's store interfaces,
// one section per interface: RunOrgs, RunLedger, RunKeys, RunAdmission
// (and RunPlanAdmission, its plan usage), RunReceipts, RunOutcomes,
// RunProviderCredentials and RunPeople; Run runs them all against a
// core.Store. RunModeStore (core.ModeStore) and RunModeSource
// (core.ModeSource) are run apart. Every implementation runs the sections of the
// interfaces it implements from its own tests, against a real backend.
//
// A section tests behaviour through the interfaces only, as a caller of the
// store would see it. Its type constraint names the interfaces it uses: its
// own, and those it sets up with (an organisation to hold a key, a balance
// to check that a refused hold held nothing).
//
// newStore must return a store over a fresh, empty, migrated database each
// time it is called. Every test calls t.Parallel.
package storetest

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// Run runs every section against the stores newStore returns.
func Run(t *testing.T, newStore func(t *testing.T) core.Store) {
	t.Run("Orgs", func(t *testing.T) { t.Parallel(); RunOrgs(t, newStore) })
	t.Run("Ledger", func(t *testing.T) { t.Parallel(); RunLedger(t, newStore) })
	t.Run("Keys", func(t *testing.T) { t.Parallel(); RunKeys(t, newStore) })
	t.Run("Admission", func(t *testing.T) { t.Parallel(); RunAdmission(t, newStore) })
	t.Run("PlanAdmission", func(t *testing.T) { t.Parallel(); RunPlanAdmission(t, newStore) })
	t.Run("Receipts", func(t *testing.T) { t.Parallel(); RunReceipts(t, newStore) })
	t.Run("Outcomes", func(t *testing.T) { t.Parallel(); RunOutcomes(t, newStore) })
	t.Run("ProviderCredentials", func(t *testing.T) { t.Parallel(); RunProviderCredentials(t, newStore) })
	t.Run("People", func(t *testing.T) { t.Parallel(); RunPeople(t, newStore) })
}

// newOrg returns a new store and an organisation created in it.
func newOrg[S core.Orgs](t *testing.T, newStore func(t *testing.T) S, name string) (S, *core.Org) {
	t.Helper()
	s := newStore(t)
	return s, createOrg(t, s, name)
}

// createOrg creates an organisation named name: verified, holding the trial
// credit.
func createOrg(t *testing.T, s core.Orgs, name string) *core.Org {
	t.Helper()
	org, _, err := s.CreateOrg(context.Background(), &core.CreateOrgParams{Name: name})
	require.NoError(t, err)
	return org
}

func balance(t *testing.T, s core.Ledger, orgID string) *core.Balance {
	t.Helper()
	b, err := s.GetBalance(context.Background(), orgID)
	require.NoError(t, err)
	return b
}

// requireJournalMatches checks that every posting of the organisation is
// balanced and that its balance is the sum of its journal, and returns the
// journal.
func requireJournalMatches(t *testing.T, s core.Ledger, orgID string) []*core.Posting {
	t.Helper()
	postings, err := s.ListPostings(context.Background(), orgID)
	require.NoError(t, err)
	requireBalanced(t, postings)
	require.Equal(t, balance(t, s, orgID).Balance, orgLegSum(postings, orgID), "balance equals journal")
	return postings
}

// hashOf is the SHA-256 of s, as a request's hash.
func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func requireBalanced(t *testing.T, postings []*core.Posting) {
	t.Helper()
	for _, p := range postings {
		var sum core.Micros
		for _, l := range p.Legs {
			sum += l.Amount
		}
		require.Zerof(t, sum, "posting %d legs sum to %s", p.ID, sum)
		require.GreaterOrEqual(t, len(p.Legs), 2)
	}
}

func orgLegSum(postings []*core.Posting, orgID string) core.Micros {
	var sum core.Micros
	for _, p := range postings {
		for _, l := range p.Legs {
			if l.Account == core.AccountOrgBalance && l.OrgID == orgID {
				sum += l.Amount
			}
		}
	}
	return sum
}
