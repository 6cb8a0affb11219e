package policies

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/conclavehq/conclave/core"
)

// Keys of the input document, built once. They follow the JSON tags of
// core.AuthzInput and its parts; TestInputValueMatchesJSON holds them to it.
var (
	keyAction    = ast.StringTerm("action")
	keyPrincipal = ast.StringTerm("principal")
	keyOrg       = ast.StringTerm("org")
	keyMode      = ast.StringTerm("mode")
	keyTier      = ast.StringTerm("tier")
	keyPerson    = ast.StringTerm("person")
	keyOwner     = ast.StringTerm("owner")
	keyRole      = ast.StringTerm("role")

	keyKind   = ast.StringTerm("kind")
	keyKeyID  = ast.StringTerm("key_id")
	keyTest   = ast.StringTerm("test")
	keyScopes = ast.StringTerm("scopes")
	keyModes  = ast.StringTerm("modes")

	keyID          = ast.StringTerm("id")
	keyPlan        = ast.StringTerm("plan")
	keyPlanMaxTier = ast.StringTerm("plan_max_tier")
	keyPlanModes   = ast.StringTerm("plan_modes")

	keyKey      = ast.StringTerm("key")
	keyTicker   = ast.StringTerm("ticker")
	keyOwnerOrg = ast.StringTerm("owner_org")
	keyPlans    = ast.StringTerm("plans")
	keyTiers    = ast.StringTerm("tiers")

	keyVersion   = ast.StringTerm("version")
	keySuffix    = ast.StringTerm("suffix")
	keyListing   = ast.StringTerm("listing")
	keyPublished = ast.StringTerm("published")
	keyInvited   = ast.StringTerm("invited")
)

// inputValue builds the policy input for in directly as an AST value: the
// same document json.Marshal(in) would produce (omitted and null fields
// included), without a JSON round trip.
func inputValue(in *core.AuthzInput) ast.Value {
	items := make([][2]*ast.Term, 0, 8)
	items = append(items,
		ast.Item(keyAction, ast.StringTerm(in.Action)),
		ast.Item(keyPrincipal, principalTerm(in.Principal)),
		ast.Item(keyOrg, orgTerm(in.Org)),
	)
	if in.Mode != nil {
		items = append(items, ast.Item(keyMode, modeTerm(in.Mode)))
	}
	if in.Tier != "" {
		items = append(items, ast.Item(keyTier, ast.StringTerm(string(in.Tier))))
	}
	if in.Person != nil {
		items = append(items, ast.Item(keyPerson, ast.ObjectTerm(
			ast.Item(keyID, ast.StringTerm(in.Person.ID)),
			ast.Item(keyRole, ast.StringTerm(string(in.Person.Role))),
		)))
	}
	if in.Owner != "" {
		items = append(items, ast.Item(keyOwner, ast.StringTerm(in.Owner)))
	}
	if len(in.Scopes) > 0 {
		items = append(items, ast.Item(keyScopes, stringsTerm(in.Scopes)))
	}
	return ast.NewObject(items...)
}

func principalTerm(p *core.AuthzPrincipal) *ast.Term {
	if p == nil {
		return ast.NullTerm()
	}
	return ast.ObjectTerm(
		ast.Item(keyKind, ast.StringTerm(p.Kind)),
		ast.Item(keyKeyID, ast.StringTerm(p.KeyID)),
		ast.Item(keyTest, ast.BooleanTerm(p.Test)),
		ast.Item(keyScopes, stringsTerm(p.Scopes)),
		ast.Item(keyModes, stringsTerm(p.Modes)),
	)
}

func orgTerm(o *core.AuthzOrg) *ast.Term {
	if o == nil {
		return ast.NullTerm()
	}
	items := make([][2]*ast.Term, 0, 4)
	items = append(items,
		ast.Item(keyID, ast.StringTerm(o.ID)),
		ast.Item(keyPlan, ast.StringTerm(o.Plan)),
	)
	// The plan's limits, omitted when empty, as their JSON tags say.
	if o.PlanMaxTier != "" {
		items = append(items, ast.Item(keyPlanMaxTier, ast.StringTerm(string(o.PlanMaxTier))))
	}
	if len(o.PlanModes) > 0 {
		items = append(items, ast.Item(keyPlanModes, stringsTerm(o.PlanModes)))
	}
	return ast.ObjectTerm(items...)
}

func modeTerm(m *core.AuthzMode) *ast.Term {
	items := make([][2]*ast.Term, 0, 11)
	items = append(items,
		ast.Item(keyID, ast.StringTerm(m.ID)),
		ast.Item(keyKey, ast.StringTerm(m.Key)),
	)
	if m.Ticker != "" {
		items = append(items, ast.Item(keyTicker, ast.StringTerm(m.Ticker)))
	}
	if m.OwnerOrg != "" {
		items = append(items, ast.Item(keyOwnerOrg, ast.StringTerm(m.OwnerOrg)))
	}
	items = append(items, ast.Item(keyPlans, stringsTerm(m.Plans)))
	if m.Tiers == nil {
		items = append(items, ast.Item(keyTiers, ast.NullTerm()))
	} else {
		tiers := make([]*ast.Term, len(m.Tiers))
		for i, t := range m.Tiers {
			tiers[i] = ast.StringTerm(string(t))
		}
		items = append(items, ast.Item(keyTiers, ast.ArrayTerm(tiers...)))
	}
	// How the caller reached an organisation's mode (all omitted when
	// empty, as their JSON tags say).
	if m.Version != 0 {
		items = append(items, ast.Item(keyVersion, ast.IntNumberTerm(m.Version)))
	}
	if m.Suffix != "" {
		items = append(items, ast.Item(keySuffix, ast.StringTerm(m.Suffix)))
	}
	if m.Listing != "" {
		items = append(items, ast.Item(keyListing, ast.StringTerm(string(m.Listing))))
	}
	if m.Published {
		items = append(items, ast.Item(keyPublished, ast.BooleanTerm(true)))
	}
	if m.Invited {
		items = append(items, ast.Item(keyInvited, ast.BooleanTerm(true)))
	}
	return ast.ObjectTerm(items...)
}

// stringsTerm is a JSON array of ss, or null for a nil slice, as
// encoding/json writes it.
func stringsTerm(ss []string) *ast.Term {
	if ss == nil {
		return ast.NullTerm()
	}
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(terms...)
}
