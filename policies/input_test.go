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
			Mode: &core.AuthzMode{ID: "acme-panl", Key: "panl", OwnerOrg: "o", Tiers: []core.Tier{core.TierPlus}, Version: 3,
				Suffix: "v3", Listing: core.ListingApproved, Published: true, Invited: true},
		},
		{Mode: &core.AuthzMode{ID: "acme-panl", Version: 1, Listing: core.ListingPending}},
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
