package policies

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// TestInputValueMatchesJSON holds inputValue to the JSON form of
// core.AuthzInput, which is what the policies are written against.
func TestInputValueMatchesJSON(t *testing.T) {
	t.Parallel()
	inputs := []*core.AuthzInput{
		{},
		{Action: core.ActionModelsRead, Principal: &core.AuthzPrincipal{}, Org: &core.AuthzOrg{}},
		{
			Action:    core.ActionChatCreate,
			Principal: &core.AuthzPrincipal{Kind: "api_key", KeyID: "k", Test: true, Scopes: []string{"a", "b"}, Modes: []string{}},
			Org:       &core.AuthzOrg{ID: "o", Plan: "pro"},
			Mode:      &core.AuthzMode{ID: "m", Key: "k", Ticker: "T:T", OwnerOrg: "o", Plans: []string{"pro"}, Tiers: []core.Tier{core.TierPlus}},
			Tier:      core.TierPro,
		},
		{
			Action: core.ActionChatCreate,
			Mode:   &core.AuthzMode{ID: "m", Tiers: []core.Tier{}},
		},
		{Mode: &core.AuthzMode{}},
		{
			Action: core.ActionChatCreate,
			Mode: &core.AuthzMode{ID: "m", OwnerOrg: "o", Tiers: []core.Tier{core.TierPlus},
				Version: 3, Suffix: "v3", Listing: core.ListingApproved, Published: true, Invited: true},
		},
		{Mode: &core.AuthzMode{ID: "m", OwnerOrg: "o", Version: 1, Suffix: "lab", Listing: core.ListingNone}},
		// A person acting, on an object someone created, asking for a key's
		// scopes; and one who left (role "").
		{
			Action:    core.ActionKeysCreate,
			Principal: core.PrincipalForPerson(core.PrincipalSession),
			Org:       &core.AuthzOrg{ID: "o", Plan: "free"},
			Person:    &core.AuthzPerson{ID: "person_1", Role: core.RoleMember},
			Owner:     "person_2",
			Scopes:    []string{core.ScopeTests, core.ScopeDeliberate},
		},
		{Action: core.ActionTestsCancel, Person: &core.AuthzPerson{ID: "person_1"}, Owner: "person_1"},
		{Action: core.ActionKeysCreate, Person: &core.AuthzPerson{}, Scopes: []string{}},
		// The organisation's plan as configured: its highest tier and its
		// modes, or none (every mode), or an empty list (omitted, as nil).
		{
			Action:    core.ActionChatCreate,
			Principal: core.PrincipalForPerson(core.PrincipalOAuthApp),
			Org:       &core.AuthzOrg{ID: "o", Plan: "plus", PlanMaxTier: core.TierPlus, PlanModes: []string{"m", "T:T"}},
		},
		{Org: &core.AuthzOrg{ID: "o", Plan: "plus", PlanMaxTier: core.TierExperience}},
		{Org: &core.AuthzOrg{ID: "o", Plan: "plus", PlanModes: []string{}}},
	}
	for _, in := range inputs {
		b, err := json.Marshal(in)
		require.NoError(t, err)
		want, err := ast.ValueFromReader(bytes.NewReader(b))
		require.NoError(t, err)
		got := inputValue(in)
		require.Zero(t, want.Compare(got), "JSON %s\ngot  %s", b, got)
	}
}
