package policies_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/policies"
)

// embedded is one engine over the embedded policies, shared by the tests.
var embedded = sync.OnceValues(func() (*policies.Engine, error) {
	return policies.New(context.Background(), policies.Config{})
})

func engine(tb testing.TB) *policies.Engine {
	tb.Helper()
	e, err := embedded()
	require.NoError(tb, err)
	return e
}

func key(mut ...func(*core.Key)) *core.AuthzPrincipal {
	k := &core.Key{ID: "key_1", OrgID: "org_ours", Scopes: core.AllScopes}
	for _, f := range mut {
		f(k)
	}
	return core.PrincipalForKey(k)
}

var ours = &core.Org{ID: "org_ours", Plan: core.PlanStandard}

func seats(tiers ...core.Tier) core.Deliberation {
	d := core.Deliberation{Seats: map[core.Tier][]core.Seat{}}
	for _, t := range tiers {
		d.Seats[t] = []core.Seat{{Engine: "sim/atlas"}}
	}
	return d
}

var (
	standardMode = core.ModeForPolicy(&core.Mode{
		Key: "standard", ID: "conclave-standard", Ticker: "CNCL:STND",
		Deliberation: seats(core.Tiers...),
	})
	maxMode = core.ModeForPolicy(&core.Mode{
		Key: "max", ID: "conclave-max", Ticker: "CNCL:MAXX", Plans: []string{"pro", "enterprise"},
		Deliberation: seats(core.Tiers...),
	})
	ownMode = core.ModeForPolicy(&core.Mode{
		Key: "panel", ID: "ours-panel", Ticker: "OURS:PANL", OwnerOrg: "org_ours", Plans: []string{"pro"},
		Deliberation: seats(core.TierPlus),
	})
	theirMode = core.ModeForPolicy(&core.Mode{
		Key: "secret", ID: "theirs-secret", Ticker: "THEM:SCRT", OwnerOrg: "org_theirs",
		Deliberation: seats(core.Tiers...),
	})
	// Another organisation's mode as the mode source resolves it: version
	// 2 named as it stands while nothing is published; version 1, the
	// published one; version 2 named @lab, by an organisation not invited
	// and by one invited.
	unpublishedMode = theirs(2, &core.ModeReach{Listing: core.ListingPending})
	publishedMode   = theirs(1, &core.ModeReach{Listing: core.ListingApproved, Published: true})
	labMode         = theirs(2, &core.ModeReach{Suffix: "lab", Listing: core.ListingApproved})
	invitedLabMode  = theirs(2, &core.ModeReach{Suffix: "lab", Listing: core.ListingApproved, Invited: true})
)

func theirs(version int, reach *core.ModeReach) *core.AuthzMode {
	return core.ModeForPolicy(&core.Mode{
		Key: "secret", ID: "theirs-secret", Ticker: "THEM:SCRT", OwnerOrg: "org_theirs",
		Deliberation: seats(core.Tiers...), Version: version, Reach: reach,
	})
}

// reached is another organisation's mode, reached as r says.
func reached(r *core.ModeReach) *core.AuthzMode {
	return core.ModeForPolicy(&core.Mode{Key: "panl", ID: "them-panl", Ticker: "THEM:PANL", OwnerOrg: "org_theirs",
		Deliberation: seats(core.TierPlus), Version: 2, Reach: r})
}

func TestDecide(t *testing.T) {
	t.Parallel()
	free := &core.AuthzOrg{ID: "org_ours", Plan: "free"}
	app := core.PrincipalForPerson(core.PrincipalOAuthApp)
	member := &core.AuthzPerson{ID: "person_m", Role: core.RoleMember}

	tests := []struct {
		name string
		in   core.AuthzInput
		want core.Code // "" means allow
	}{
		{"allow models.read", core.AuthzInput{Action: core.ActionModelsRead, Principal: key(), Org: core.OrgForPolicy(ours)}, ""},
		{"allow chat", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: standardMode, Tier: core.TierPlus}, ""},
		{"allow own mode", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: ownMode, Tier: core.TierPlus}, ""},
		{"allow another org's published mode", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours),
			Mode: reached(&core.ModeReach{Listing: core.ListingApproved, Published: true})}, ""},
		{"allow another org's lab to the invited", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours),
			Mode: reached(&core.ModeReach{Suffix: "lab", Listing: core.ListingApproved, Invited: true})}, ""},
		{"allow plan-limited mode on its plan", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: &core.AuthzOrg{ID: "org_ours", Plan: "pro"}, Mode: maxMode}, ""},
		{"allow key limited by ticker", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(func(k *core.Key) { k.Modes = []string{"CNCL:STND"} }), Org: core.OrgForPolicy(ours), Mode: standardMode}, ""},
		{"allow api key pro on free plan", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: free, Mode: standardMode, Tier: core.TierPro}, ""},
		{"allow app within plan", core.AuthzInput{Action: core.ActionChatCreate, Principal: app, Person: member, Org: free, Mode: standardMode,
			Tier: core.TierExperience}, ""},
		{"allow nil key scopes and modes read as empty", core.AuthzInput{Action: core.ActionModelsRead, Principal: &core.AuthzPrincipal{Kind: "api_key", Scopes: []string{core.ScopeModelsRead}}, Org: core.OrgForPolicy(ours)}, ""},

		{"allow published mode of another org", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: publishedMode, Tier: core.TierPlus}, ""},
		{"allow invited lab", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: invitedLabMode}, ""},
		{"allow estimate on invited lab", core.AuthzInput{Action: core.ActionEstimate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: invitedLabMode}, ""},
		{"allow modes.read own", core.AuthzInput{Action: core.ActionModesRead, Principal: key(), Org: core.OrgForPolicy(ours), Mode: ownMode}, ""},
		{"allow modes.validate test key", core.AuthzInput{Action: core.ActionModesValidate, Principal: key(func(k *core.Key) { k.Test = true }), Org: core.OrgForPolicy(ours)}, ""},

		{"mode_not_published", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: unpublishedMode}, core.CodeModeNotPublished},
		{"mode_not_published without reach", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: theirMode}, core.CodeModeNotPublished},
		{"lab_not_available", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: labMode}, core.CodeLabNotAvailable},
		{"forbidden modes.read", core.AuthzInput{Action: core.ActionModesRead, Principal: key(), Org: core.OrgForPolicy(ours), Mode: publishedMode}, core.CodeForbidden},
		{"forbidden modes.write", core.AuthzInput{Action: core.ActionModesWrite, Principal: key(), Org: core.OrgForPolicy(ours), Mode: invitedLabMode}, core.CodeForbidden},
		{"insufficient_scope", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(func(k *core.Key) { k.Scopes = []string{core.ScopeModelsRead} }), Org: core.OrgForPolicy(ours), Mode: standardMode}, core.CodeInsufficientScope},
		{"insufficient_scope unknown action", core.AuthzInput{Action: "models.delete", Principal: key(), Org: core.OrgForPolicy(ours)}, core.CodeInsufficientScope},
		{"insufficient_scope nil principal", core.AuthzInput{Action: core.ActionModelsRead, Org: core.OrgForPolicy(ours)}, core.CodeInsufficientScope},
		{"test_key_not_allowed", core.AuthzInput{Action: core.ActionModesWrite, Principal: key(func(k *core.Key) { k.Test = true }), Org: core.OrgForPolicy(ours)}, core.CodeTestKeyNotAllowed},
		{"insufficient_scope modes.validate", core.AuthzInput{Action: core.ActionModesValidate, Principal: key(func(k *core.Key) { k.Scopes = []string{core.ScopeModelsRead} }), Org: core.OrgForPolicy(ours)}, core.CodeInsufficientScope},
		{"insufficient_scope modes.read", core.AuthzInput{Action: core.ActionModesRead, Principal: key(func(k *core.Key) { k.Scopes = []string{core.ScopeModesWrite} }), Org: core.OrgForPolicy(ours), Mode: ownMode}, core.CodeInsufficientScope},
		{"mode_not_permitted", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: maxMode}, core.CodeModeNotPermitted},
		{"model_not_found key limited", core.AuthzInput{Action: core.ActionModelsRead, Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-fast"} }), Org: core.OrgForPolicy(ours), Mode: standardMode}, core.CodeModelNotFound},
		{"mode_not_allowed key limited chat", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-fast"} }), Org: core.OrgForPolicy(ours), Mode: standardMode}, core.CodeModeNotAllowed},
		{"mode_not_allowed key limited", core.AuthzInput{Action: core.ActionModesWrite, Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-fast"} }), Org: core.OrgForPolicy(ours), Mode: ownMode}, core.CodeModeNotAllowed},
		{"mode_not_allowed key limited modes.read", core.AuthzInput{Action: core.ActionModesRead, Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-fast"} }), Org: core.OrgForPolicy(ours), Mode: ownMode}, core.CodeModeNotAllowed},
		{"mode_not_allowed key limited published mode", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-fast"} }), Org: core.OrgForPolicy(ours), Mode: publishedMode}, core.CodeModeNotAllowed},
		{"tier_not_permitted no seats", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: ownMode, Tier: core.TierPro}, core.CodeTierNotPermitted},
		{"tier_not_permitted over plan", core.AuthzInput{Action: core.ActionChatCreate, Principal: app, Person: member, Org: free, Mode: standardMode,
			Tier: core.TierPlus}, core.CodeTierNotPermitted},
		{"tier_not_permitted unknown tier", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: standardMode, Tier: "ultra"}, core.CodeTierNotPermitted},
		{"precedence not published over scope", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(func(k *core.Key) { k.Scopes = nil }), Org: core.OrgForPolicy(ours), Mode: unpublishedMode}, core.CodeModeNotPublished},
		{"precedence lab over key limited", core.AuthzInput{Action: core.ActionChatCreate, Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-fast"} }), Org: core.OrgForPolicy(ours), Mode: labMode}, core.CodeLabNotAvailable},
		{"precedence forbidden over test key", core.AuthzInput{Action: core.ActionModesWrite, Principal: key(func(k *core.Key) { k.Test = true }), Org: core.OrgForPolicy(ours), Mode: publishedMode}, core.CodeForbidden},
		{"precedence mode_not_permitted over tier", core.AuthzInput{Action: core.ActionChatCreate, Principal: app, Person: member, Org: free, Mode: maxMode,
			Tier: core.TierPro}, core.CodeModeNotPermitted},
		{"forbidden app acting for no person", core.AuthzInput{Action: core.ActionChatCreate, Principal: app, Org: free, Mode: standardMode,
			Tier: core.TierExperience}, core.CodeForbidden},
	}
	e := engine(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := e.Decide(t.Context(), &tt.in)
			require.NoError(t, err)
			if tt.want == "" {
				require.Equal(t, &core.Decision{Allow: true}, d)
				return
			}
			require.False(t, d.Allow)
			require.Equal(t, tt.want, d.Code)
			require.NotEmpty(t, d.Message)
		})
	}
}

// A connected app is held to its organisation's plan as the deployment
// configures it (core.Plan, through AuthzOrg.WithPlan): the tier and the
// modes, each refused with tier_not_permitted naming the plan and the
// parameter; a key of the same organisation is not.
func TestDecidePlanFromInput(t *testing.T) {
	t.Parallel()
	e := engine(t)
	plus := core.Plan{Name: "plus", MaxTier: core.TierPlus, Modes: []string{"CNCL:STND"}, Configured: true}
	app := core.PrincipalForPerson(core.PrincipalOAuthApp)
	member := &core.AuthzPerson{ID: "person_m", Role: core.RoleMember}
	decide := func(p *core.AuthzPrincipal, mode *core.AuthzMode, tier core.Tier) *core.Decision {
		t.Helper()
		org := (&core.AuthzOrg{ID: "org_ours", Plan: "plus"}).WithPlan(plus)
		d, err := e.Decide(t.Context(), &core.AuthzInput{Action: core.ActionChatCreate, Principal: p, Person: member,
			Org: org, Mode: mode, Tier: tier})
		require.NoError(t, err)
		return d
	}
	require.True(t, decide(app, standardMode, core.TierPlus).Allow)
	require.Equal(t, &core.Decision{Code: core.CodeTierNotPermitted, Param: "tier",
		Message: "Your organisation's plan (plus) allows connected apps tiers up to plus; pro is above it."},
		decide(app, standardMode, core.TierPro))
	require.Equal(t, &core.Decision{Code: core.CodeTierNotPermitted, Param: "model",
		Message: `Mode "ours-panel" is not open to connected apps on your organisation's plan (plus).`},
		decide(app, ownMode, core.TierPlus))
	require.True(t, decide(key(), ownMode, core.TierPlus).Allow, "a key is not held to the plan")
	require.True(t, decide(key(), standardMode, core.TierPro).Allow)

	unconfigured := core.Plans{}.Of("mystery")
	org := (&core.AuthzOrg{ID: "org_ours", Plan: "mystery"}).WithPlan(unconfigured)
	d, err := e.Decide(t.Context(), &core.AuthzInput{Action: core.ActionChatCreate, Principal: app, Person: member, Org: org,
		Mode: standardMode, Tier: core.TierPlus})
	require.NoError(t, err)
	require.Equal(t, core.CodeTierNotPermitted, d.Code, "a plan not configured opens only the lowest tier")
}

func TestDecideNilInput(t *testing.T) {
	t.Parallel()
	_, err := engine(t).Decide(t.Context(), nil)
	require.Error(t, err)
}

func TestDecideConcurrently(t *testing.T) {
	t.Parallel()
	e := engine(t)
	in := &core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: maxMode, Tier: core.TierPlus}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				d, err := e.Decide(context.Background(), in)
				if err != nil || d.Code != core.CodeModeNotPermitted {
					t.Errorf("got %+v, %v", d, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// writePolicies writes files (name → source) into a fresh directory.
func writePolicies(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	return dir
}

func TestDirReplacesEmbedded(t *testing.T) {
	t.Parallel()
	dir := writePolicies(t, map[string]string{
		"authz.rego": `package conclave.authz

decision := {"allow": false, "code": "mode_not_permitted", "message": "Nothing is permitted here."}
`,
		// Test files are not loaded: this one would not even compile.
		"authz_test.rego": "package conclave.authz_test\n\ntest_x if { undefined_function(1) }\n",
	})
	e, err := policies.New(t.Context(), policies.Config{Dir: dir})
	require.NoError(t, err)

	d, err := e.Decide(t.Context(), &core.AuthzInput{Action: core.ActionModelsRead, Principal: key(), Org: core.OrgForPolicy(ours)})
	require.NoError(t, err)
	require.Equal(t, &core.Decision{Allow: false, Code: core.CodeModeNotPermitted, Message: "Nothing is permitted here."}, d)
}

func TestDirRecursesAndIgnoresTests(t *testing.T) {
	t.Parallel()
	dir := writePolicies(t, map[string]string{
		"authz.rego":      "package conclave.authz\n\nimport data.conclave.tables\n\ndecision := {\"allow\": input.action in tables.allowed, \"code\": \"forbidden\", \"message\": \"\"}\n",
		"lib/tables.rego": "package conclave.tables\n\nallowed := {\"models.read\"}\n",
	})
	e, err := policies.New(t.Context(), policies.Config{Dir: dir})
	require.NoError(t, err)
	d, err := e.Decide(t.Context(), &core.AuthzInput{Action: core.ActionModelsRead})
	require.NoError(t, err)
	require.True(t, d.Allow)
	d, err = e.Decide(t.Context(), &core.AuthzInput{Action: core.ActionChatCreate})
	require.NoError(t, err)
	require.Equal(t, &core.Decision{Code: core.CodeForbidden}, d)
}

func TestBrokenDirFailsNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error
	}{
		{
			name:  "syntax error",
			files: map[string]string{"authz.rego": "package conclave.authz\n\ndecision := {\"allow\" true}\n\nx := 1\n"},
			want:  []string{"authz.rego:3", "rego_parse_error"},
		},
		{
			name:  "compile error",
			files: map[string]string{"authz.rego": "package conclave.authz\n\ndecision := {\"allow\": true, \"code\": \"\", \"message\": \"\"}\n\nx if no_such_function(1)\n"},
			want:  []string{"authz.rego:5", "no_such_function"},
		},
		{
			name:  "rego conflict",
			files: map[string]string{"authz.rego": "package conclave.authz\n\ndecision := {\"allow\": true}\n\ndecision := {\"allow\": false, \"code\": \"forbidden\"}\n"},
			want:  []string{"authz.rego"},
		},
		{
			name:  "no decision rule",
			files: map[string]string{"authz.rego": "package conclave.authz\n\nallow := true\n"},
			want:  []string{"data.conclave.authz.decision"},
		},
		{
			name:  "decision not an object",
			files: map[string]string{"authz.rego": "package conclave.authz\n\ndecision := true\n"},
			want:  []string{"not an object"},
		},
		{
			name:  "decision undefined",
			files: map[string]string{"authz.rego": "package conclave.authz\n\ndecision := {\"allow\": true} if input.action == \"nothing\"\n"},
			want:  []string{"undefined"},
		},
		{
			name:  "deny without code",
			files: map[string]string{"authz.rego": "package conclave.authz\n\ndecision := {\"allow\": false, \"message\": \"no\"}\n"},
			want:  []string{"without a code"},
		},
		{
			name:  "only tests",
			files: map[string]string{"authz_test.rego": "package conclave.authz_test\n"},
			want:  []string{"no .rego policy files"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writePolicies(t, tt.files)
			_, err := policies.New(t.Context(), policies.Config{Dir: dir})
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			if tt.name != "only tests" && tt.name != "no decision rule" {
				require.ErrorContains(t, err, filepath.Join(dir, "authz.rego"), "the error names the file")
			}
		})
	}
}

func TestMissingDirFailsNew(t *testing.T) {
	t.Parallel()
	_, err := policies.New(t.Context(), policies.Config{Dir: filepath.Join(t.TempDir(), "nope")})
	require.Error(t, err)
}

func TestDecideRejectsMisshapenDecision(t *testing.T) {
	t.Parallel()
	dir := writePolicies(t, map[string]string{"authz.rego": `package conclave.authz

decision := {"allow": true, "code": "", "message": ""} if input.action == "models.read"

decision := {"allow": false, "code": "", "message": "no code"} if input.action == "chat.create"

decision := {"allow": "yes"} if input.action == "tests.read"
`})
	e, err := policies.New(t.Context(), policies.Config{Dir: dir})
	require.NoError(t, err)
	for action, want := range map[string]string{
		core.ActionChatCreate:   "without a code",
		core.ActionTestsRead:    "not a boolean",
		core.ActionReceiptsRead: "undefined",
	} {
		d, err := e.Decide(t.Context(), &core.AuthzInput{Action: action})
		require.ErrorContains(t, err, want, action)
		require.Nil(t, d)
	}
}

// A policy set that reads the clock (or any non-deterministic built-in) is
// never memoized: the same input may deserve a different answer later.
func TestImpurePoliciesAreNotMemoized(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pure, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	require.True(t, pure.Memoized())

	dir := t.TempDir()
	src, err := policies.FS.ReadFile("authz.rego")
	require.NoError(t, err)
	impure := string(src) + `
# Deny everything during a maintenance window that never ends.
denials contains {"rank": 0, "code": "insufficient_scope", "message": "maintenance"} if {
	time.now_ns() > 0
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(impure), 0o600))
	e, err := policies.New(ctx, policies.Config{Dir: dir})
	require.NoError(t, err)
	require.False(t, e.Memoized())
}

// BenchmarkDecide measures one decision evaluated by OPA (memo=off) beside
// the same decision answered from the memo (memo=on), as the API sees it
// for a repeated key, mode and tier.
func BenchmarkDecide(b *testing.B) {
	in := &core.AuthzInput{
		Action:    core.ActionChatCreate,
		Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-standard", "conclave-max"} }),
		Org:       core.OrgForPolicy(ours),
		Mode:      standardMode,
		Tier:      core.TierPlus,
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		memo int
	}{{"memo=off", -1}, {"memo=on", 0}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := policies.New(ctx, policies.Config{MemoEntries: c.memo})
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				d, err := e.Decide(ctx, in)
				if err != nil || !d.Allow {
					b.Fatalf("got %+v, %v", d, err)
				}
			}
		})
	}
}

// The memo answers a repeated input exactly as evaluation would, and hands
// out copies.
func TestMemoAnswersLikeEvaluation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	memo, err := policies.New(ctx, policies.Config{MemoEntries: 2})
	require.NoError(t, err)
	plain, err := policies.New(ctx, policies.Config{MemoEntries: -1})
	require.NoError(t, err)
	inputs := []*core.AuthzInput{
		{Action: core.ActionModelsRead, Principal: key(), Org: core.OrgForPolicy(ours), Mode: maxMode},
		{Action: core.ActionModelsRead, Principal: key(func(k *core.Key) { k.Scopes = []string{core.ScopeEstimate} }), Org: core.OrgForPolicy(ours)},
		{Action: core.ActionModelsRead, Principal: key(func(k *core.Key) { k.Modes = []string{"conclave-standard"} }), Org: core.OrgForPolicy(ours), Mode: maxMode},
	}
	for round := 0; round < 3; round++ { // the third input overflows the memo and empties it
		for _, in := range inputs {
			want, err := plain.Decide(ctx, in)
			require.NoError(t, err)
			got, err := memo.Decide(ctx, in)
			require.NoError(t, err)
			require.Equal(t, want, got)
			got.Allow, got.Code = !got.Allow, "tampered"
		}
	}
}

func BenchmarkDecideParallel(b *testing.B) {
	e := engine(b)
	in := &core.AuthzInput{Action: core.ActionChatCreate, Principal: key(), Org: core.OrgForPolicy(ours), Mode: maxMode, Tier: core.TierPlus}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Decide(context.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
