package callstest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/execute"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/jobs"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/tokens"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/policies"
)

// The plans the tests put organisations on (docs/plans.md).
var testPlans = core.Plans{
	// Every tier and mode, $5 a person a month, 8 calls in flight each.
	"team": {Name: "team", MaxTier: core.TierPro, Allowance: core.USD(5), Concurrency: 8, RPM: 600, Configured: true},
	// conclave-standard up to plus; one call in flight.
	"plus": {Name: "plus", MaxTier: core.TierPlus, Modes: []string{"conclave-standard"}, Allowance: core.USD(20),
		Concurrency: 1, RPM: 600, Configured: true},
	// Twenty cents a person a month.
	"tight": {Name: "tight", MaxTier: core.TierPro, Allowance: 200_000, Concurrency: 2, RPM: 600, Configured: true},
	// Two requests a minute a person.
	"slow": {Name: "slow", MaxTier: core.TierPro, Allowance: core.USD(5), Concurrency: 2, RPM: 2, Configured: true},
}

// gatedDeliberator holds every deliberation at Execute — after its
// admission and classification — until open is closed, and says so on
// entered; a nil open lets them through.
type gatedDeliberator struct {
	*deliberate.Engine
	open    chan struct{}
	entered chan struct{}
	once    sync.Once
}

// hold makes deliberations wait at the gate until release; a test that
// fails first releases them as it ends, so that the service can stop.
func (g *gatedDeliberator) hold(t *testing.T) {
	g.open = make(chan struct{})
	t.Cleanup(g.release)
}

func (g *gatedDeliberator) release() { g.once.Do(func() { close(g.open) }) }

func (g *gatedDeliberator) Execute(ctx context.Context, p *deliberate.Plan) (*deliberate.Result, error) {
	if g.open != nil {
		g.entered <- struct{}{}
		<-g.open
	}
	return g.Engine.Execute(ctx, p)
}

// planBundle is Conclave on replicas sharing one database, with the test
// plans configured: each replica its own pool, store, access and calls
// service, as separate processes would have.
type planBundle struct {
	catalog *core.Catalog
	authz   *policies.Engine
	pools   []*pgxpool.Pool
	stores  []*pgstore.Store
	access  []*access.Service
	svcs    []*calls.Service
	gate    *gatedDeliberator
}

func setupPlans(t *testing.T, replicas int) *planBundle {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	prov, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: 0.02}, Egress: egress.Config{MaxAttempts: 1}})
	require.NoError(t, err)
	t.Cleanup(func() { prov.Stop(context.Background()) })
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	require.NoError(t, err)
	b := &planBundle{catalog: catalog, authz: authz, gate: &gatedDeliberator{Engine: engine, entered: make(chan struct{}, 64)}}
	url := pgtest.NewDatabase(t)
	for range replicas {
		pool, err := pgxpool.New(ctx, url)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		store := pgstore.New(pool)
		acc, err := access.New(access.Config{Concurrency: 16, Plans: testPlans}, store, authz, store)
		require.NoError(t, err)
		svc, err := calls.New(calls.Config{}, calls.Deps{
			Access: acc, Admission: store, Receipts: store, Outcomes: store, Catalog: catalog,
			Modes: core.NewAuthoredModeSource(catalog, store), Deliberator: b.gate, TokensOver: tokens.Over,
		})
		require.NoError(t, err)
		require.NoError(t, svc.Start(ctx))
		t.Cleanup(svc.Stop)
		b.pools, b.stores, b.access = append(b.pools, pool), append(b.stores, store), append(b.access, acc)
		b.svcs = append(b.svcs, svc)
	}
	return b
}

// org creates an organisation on plan.
func (b *planBundle) org(t *testing.T, plan string) *core.Org {
	t.Helper()
	org, _, err := b.stores[0].CreateOrg(context.Background(), &core.CreateOrgParams{Name: "On " + plan, Plan: plan})
	require.NoError(t, err)
	return org
}

// app is a connected app acting for the member personID of org.
func app(org *core.Org, personID string) *access.Principal {
	return &access.Principal{Kind: core.PrincipalOAuthApp, Person: &core.Person{ID: personID}, Role: core.RoleMember,
		Org: org, Scopes: core.AllScopes}
}

// session is the member personID of org signed in on the pages.
func session(org *core.Org, personID string) *access.Principal {
	return &access.Principal{Kind: core.PrincipalSession, Person: &core.Person{ID: personID}, Role: core.RoleMember, Org: org}
}

func ask(model string, tier core.Tier, question string) *calls.ChatParams {
	return &calls.ChatParams{Model: model, Tier: tier, Messages: []core.Message{{Role: core.RoleUser, Content: question}}}
}

func (b *planBundle) chat(p *access.Principal, req *calls.ChatParams) (*calls.Completion, error) {
	return b.chatOn(0, p, req)
}

func (b *planBundle) chatOn(replica int, p *access.Principal, req *calls.ChatParams) (*calls.Completion, error) {
	res, err := b.svcs[replica].Chat(context.Background(), p, calls.Call{RequestID: core.NewID("req"), Endpoint: "test:deliberate"}, req)
	if err != nil {
		return nil, err
	}
	return res.Completion, nil
}

func (b *planBundle) balance(t *testing.T, orgID string) *core.Balance {
	t.Helper()
	bal, err := b.stores[0].GetBalance(context.Background(), orgID)
	require.NoError(t, err)
	return bal
}

// A connected app's call is billed at real cost: the token charge alone,
// no platform fee (on the bill or any call) and no surcharge, held against
// the mode's projection (conclave-standard's cost ceiling, $1.50) rather
// than the deployment's $2.00 call ceiling; the journal charges exactly
// that, to the organisation, and the receipt says who paid and for whom. A
// signed-in person of the same organisation is billed as an API key is:
// surcharge, fee, the call ceiling. So are their estimates quoted.
func TestPlanUsageIsBilledAtRealCost(t *testing.T) {
	t.Parallel()
	b := setupPlans(t, 1)
	ctx := context.Background()
	org := b.org(t, "team")
	const question = "Should a small team adopt trunk-based development? Weigh the risks for a regulated product."

	comp, err := b.chat(app(org, "person_ada"), ask("conclave-standard", core.TierPlus, question))
	require.NoError(t, err)
	panel := comp.Panel
	billed := core.Micros(panel.BilledUSD)
	require.Positive(t, billed)
	require.Zero(t, panel.PlatformFeeUSD)
	require.Zero(t, panel.SurchargeUSD)
	require.Equal(t, core.Micros(panel.TokenChargeUSD)-core.Micros(panel.CapCreditUSD), billed, "the token charge alone")
	require.Equal(t, core.Micros(1_500_000), core.Micros(panel.CeilingUSD), "held against the mode's cost ceiling")

	rc, err := b.stores[0].GetReceipt(ctx, org.ID, panel.RequestID)
	require.NoError(t, err)
	require.Equal(t, core.PrincipalOAuthApp, rc.PayerKind)
	require.Equal(t, "person_ada", rc.PersonID)
	require.Equal(t, org.ID, rc.Payer, "the organisation pays")
	require.Empty(t, rc.KeyID)
	require.Zero(t, rc.PlatformFee)
	require.Zero(t, rc.Surcharge)
	require.Equal(t, billed, rc.Billed)
	var tokens core.Micros
	for _, c := range append(append([]core.ReceiptCall{}, rc.Seats...), rc.Staff...) {
		require.Zero(t, c.FeeRatePPM, "%s %s", c.Role, c.ModelUsed)
		require.Zero(t, c.Fee, "%s %s", c.Role, c.ModelUsed)
		tokens += c.RealCost
	}
	require.Equal(t, tokens, rc.TokenCharge, "every call's real cost, nothing on top")

	postings, err := b.stores[0].ListPostings(ctx, org.ID)
	require.NoError(t, err)
	last := postings[len(postings)-1]
	require.Equal(t, core.PostingCallCharge, last.Kind)
	require.ElementsMatch(t, []core.Leg{{Account: core.AccountOrgBalance, OrgID: org.ID, Amount: -billed},
		{Account: core.AccountRevenue, Amount: billed}}, last.Legs, "the journal charges the token charge to the organisation")
	bal := b.balance(t, org.ID)
	require.Equal(t, core.TrialCredit-billed, bal.Balance)
	require.Zero(t, bal.Held)

	// The same question from a person signed in: an API call.
	comp, err = b.chat(session(org, "person_ada"), ask("conclave-standard", core.TierPlus, question))
	require.NoError(t, err)
	panel = comp.Panel
	require.Positive(t, panel.PlatformFeeUSD, "a session pays the fee")
	require.Positive(t, panel.SurchargeUSD, "and the surcharge")
	require.Equal(t, core.DefaultCeilingFloor, core.Micros(panel.CeilingUSD), "within the deployment's call ceiling")
	require.Equal(t, core.Micros(panel.TokenChargeUSD)+core.Micros(panel.PlatformFeeUSD)+core.Micros(panel.SurchargeUSD)-
		core.Micros(panel.CapCreditUSD), core.Micros(panel.BilledUSD))
	rc, err = b.stores[0].GetReceipt(ctx, org.ID, panel.RequestID)
	require.NoError(t, err)
	require.Equal(t, core.PrincipalSession, rc.PayerKind)
	require.Equal(t, "person_ada", rc.PersonID)
	require.Positive(t, rc.PlatformFee)
	require.Equal(t, core.FeeRateServicePPM, rc.Seats[0].FeeRatePPM)

	// Estimates quote what the call would bill: no surcharge for the app.
	est := &calls.EstimateParams{Model: "conclave-standard", Tier: core.TierPlus,
		Messages: []core.Message{{Role: core.RoleUser, Content: question}}}
	e, err := b.svcs[0].Estimate(ctx, app(org, "person_ada"), calls.Call{RequestID: core.NewID("req")}, est)
	require.NoError(t, err)
	require.Zero(t, e.EstimatedPrice)
	e, err = b.svcs[0].Estimate(ctx, session(org, "person_ada"), calls.Call{RequestID: core.NewID("req")}, est)
	require.NoError(t, err)
	require.Positive(t, e.EstimatedPrice)
}

// Eight calls of one person at once, with $5 of allowance left, to a mode
// projected at $4 (conclave-max's cost ceiling): the first holds $4, the
// second what is left, $1, and the rest are refused plan_limit_reached
// with the date the allowance resets — nothing is ever held or charged past
// the allowance, and no charge passes its hold.
func TestPlanAllowanceStopsConcurrentCallsWithoutOverspending(t *testing.T) {
	t.Parallel()
	b := setupPlans(t, 1)
	b.gate.hold(t)
	org := b.org(t, "team")
	p := app(org, "person_ada")
	const n = 8
	type outcome struct {
		comp *calls.Completion
		err  error
	}
	out := make(chan outcome, n)
	for i := range n {
		go func() {
			comp, err := b.chat(p, ask("conclave-max", core.TierExperience, fmt.Sprintf("Question %d: is it time to rewrite the billing service?", i)))
			out <- outcome{comp, err}
		}()
	}
	// Every call is either held at the gate (admitted) or answered.
	var results []outcome
	admitted := 0
	for admitted+len(results) < n {
		select {
		case <-b.gate.entered:
			admitted++
		case o := <-out:
			results = append(results, o)
		case <-time.After(time.Minute):
			t.Fatalf("%d admitted and %d answered of %d calls", admitted, len(results), n)
		}
	}
	require.Equal(t, 2, admitted, "$4 and $1: the allowance is held in full")
	require.Equal(t, core.USD(5), b.balance(t, org.ID).Held)
	b.gate.release()
	for len(results) < n {
		results = append(results, <-out)
	}

	var ceilings, charged core.Micros
	refused := 0
	for _, o := range results {
		if o.err != nil {
			e := core.AsError(o.err)
			require.Equal(t, core.CodePlanLimitReached, e.Code, "%v", o.err)
			require.Equal(t, 402, core.InfoFor(e.Code).Status)
			require.Contains(t, e.Message, "resets on "+core.AllowanceResets(time.Now()).Format(time.DateOnly)+" (UTC)")
			refused++
			continue
		}
		panel := o.comp.Panel
		require.LessOrEqual(t, core.Micros(panel.BilledUSD), core.Micros(panel.CeilingUSD), "no charge passes its hold")
		require.Zero(t, panel.PlatformFeeUSD)
		require.Zero(t, panel.SurchargeUSD)
		ceilings += core.Micros(panel.CeilingUSD)
		charged += core.Micros(panel.BilledUSD)
	}
	require.Equal(t, n-2, refused)
	require.Equal(t, core.USD(5), ceilings, "held: $4 and the $1 left")
	require.LessOrEqual(t, charged, core.USD(5))
	bal := b.balance(t, org.ID)
	require.Equal(t, core.TrialCredit-charged, bal.Balance, "charged exactly what the calls billed")
	require.Zero(t, bal.Held)

	// The next call holds what the month left.
	b.gate.open = nil
	comp, err := b.chat(p, ask("conclave-max", core.TierExperience, "And now?"))
	require.NoError(t, err)
	require.Equal(t, min(core.USD(4), core.USD(5)-charged), core.Micros(comp.Panel.CeilingUSD))
}

// A person with twenty cents of allowance calls a mode whose deliberation
// costs more: the call holds the twenty cents, is budgeted by them and
// stops there — finish_reason cost_cap, "stopped at its budget" — charged
// no more than its hold. What is left then cannot pay for another call:
// plan_limit_reached until the first of next month, nothing billed.
func TestPlanCallStopsAtItsBudgetThenTheLimitIsReached(t *testing.T) {
	t.Parallel()
	b := setupPlans(t, 1)
	org := b.org(t, "tight")
	p := app(org, "person_ada")
	// The seats disagree, so that conclave-max would critique; each answer
	// is as long as the plan projects (512 tokens), so that the first round
	// costs what it projected.
	const disagree = "Should we shard the ledger by organisation? [[sim@atlas-frontier: answer=Yes, shard it.]] " +
		"[[sim@opus: answer=No, keep one ledger.]] [[sim: tokens_out=512]]"
	comp, err := b.chat(p, ask("conclave-max", core.TierExperience, disagree))
	require.NoError(t, err)
	panel := comp.Panel
	require.Equal(t, core.Micros(200_000), core.Micros(panel.CeilingUSD), "the hold: the whole allowance, under the $4 projection")
	require.Equal(t, deliberate.FinishCostCap, comp.FinishReason, "stopped at its budget: %d rounds", panel.Rounds)
	require.Less(t, panel.Rounds, 3, "conclave-max critiques every question up to 3 rounds")
	require.LessOrEqual(t, core.Micros(panel.BilledUSD), core.Micros(200_000))
	charged := core.Micros(panel.BilledUSD)
	require.Positive(t, charged)

	_, err = b.chat(p, ask("conclave-max", core.TierExperience, "And the audit log?"))
	e := core.AsError(err)
	require.Equal(t, core.CodePlanLimitReached, e.Code, "%v", err)
	require.Contains(t, e.Message, "$0.2, and $"+charged.String()+" of it is spent")
	require.Contains(t, e.Message, "resets on "+core.AllowanceResets(time.Now()).Format(time.DateOnly))
	bal := b.balance(t, org.ID)
	require.Equal(t, core.TrialCredit-charged, bal.Balance, "the refusal billed nothing")
	require.Zero(t, bal.Held)

	_, err = b.chat(app(org, "person_bea"), ask("conclave-max", core.TierExperience, "And the audit log?"))
	require.NoError(t, err, "another person of the organisation has their own allowance")
}

// A person's calls in flight are counted in PostgreSQL: on a plan of one
// call at a time, a call running on one replica refuses the person's next
// call on another with too_many_concurrent_requests and Retry-After, and
// the person's call runs there once the first has ended. Another person is
// not held up.
func TestPlanConcurrencyAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setupPlans(t, 2)
	b.gate.hold(t)
	org := b.org(t, "plus")
	p := app(org, "person_ada")
	first := make(chan error, 1)
	go func() {
		_, err := b.chatOn(0, p, ask("conclave-standard", core.TierPlus, "What should we measure first?"))
		first <- err
	}()
	select {
	case <-b.gate.entered:
	case err := <-first:
		t.Fatalf("the first call was not admitted: %v", err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := b.chatOn(1, p, ask("conclave-standard", core.TierPlus, "And second?"))
		second <- err
	}()
	var err error
	select {
	case err = <-second:
	case <-b.gate.entered:
		t.Fatal("the person's second call was admitted beside the first")
	}
	e := core.AsError(err)
	require.Equal(t, core.CodeTooManyConcurrent, e.Code, "%v", err)
	require.Equal(t, 429, core.InfoFor(e.Code).Status)
	require.Positive(t, e.RetryAfter)
	require.Contains(t, e.Message, "plan (plus)")

	other := make(chan error, 1)
	go func() {
		_, err := b.chatOn(1, app(org, "person_bea"), ask("conclave-standard", core.TierPlus, "And third?"))
		other <- err
	}()
	select {
	case <-b.gate.entered:
	case err := <-other:
		t.Fatalf("another person's call was refused: %v", err)
	}
	b.gate.release()
	require.NoError(t, <-first)
	require.NoError(t, <-other)
	b.gate.open = nil
	_, err = b.chatOn(1, p, ask("conclave-standard", core.TierPlus, "And second?"))
	require.NoError(t, err, "the first call ended: its slot is free on every replica")
}

// A connected app asking for a tier or a mode above its organisation's
// plan is refused tier_not_permitted, naming the plan and the parameter,
// before anything is held; an API key or a person signed in is not bound
// by the plan. An organisation on a plan the deployment does not configure
// gets no allowance.
func TestPlanRefusesTierAndModeAbove(t *testing.T) {
	t.Parallel()
	b := setupPlans(t, 1)
	org := b.org(t, "plus")
	p := app(org, "person_ada")

	_, err := b.chat(p, ask("conclave-standard", core.TierPro, "Is pro worth it?"))
	e := core.AsError(err)
	require.Equal(t, core.CodeTierNotPermitted, e.Code, "%v", err)
	require.Equal(t, 403, core.InfoFor(e.Code).Status)
	require.Equal(t, "tier", e.Param)
	require.Equal(t, "Your organisation's plan (plus) allows connected apps tiers up to plus; pro is above it.", e.Message)

	_, err = b.chat(p, ask("conclave-max", core.TierPlus, "Is max worth it?"))
	e = core.AsError(err)
	require.Equal(t, core.CodeTierNotPermitted, e.Code, "%v", err)
	require.Equal(t, "model", e.Param)
	require.Equal(t, `Mode "conclave-max" is not open to connected apps on your organisation's plan (plus).`, e.Message)

	bal := b.balance(t, org.ID)
	require.Equal(t, core.TrialCredit, bal.Balance, "nothing billed")
	require.Zero(t, bal.Held)

	_, err = b.chat(session(org, "person_ada"), ask("conclave-max", core.TierPro, "Is max worth it?"))
	require.NoError(t, err, "a person signed in is not bound by the plan")

	gold := b.org(t, "gold")
	_, err = b.chat(app(gold, "person_cyd"), ask("conclave-standard", core.TierExperience, "Anything?"))
	e = core.AsError(err)
	require.Equal(t, core.CodePlanLimitReached, e.Code, "%v", err)
	require.Contains(t, e.Message, "plan (gold) is not configured")
	_, err = b.chat(app(gold, "person_cyd"), ask("conclave-standard", core.TierPlus, "Anything?"))
	require.Equal(t, core.CodeTierNotPermitted, core.AsError(err).Code, "an unconfigured plan opens only the lowest tier")
}

// A connected app launches test runs and certifications as anyone of its
// organisation does: of a mode the organisation owns (mode_not_owned
// otherwise, nothing charged), charged to the organisation's balance at
// the run's price, the batch the person's; a launch the app does not key
// is keyed by itself, for the app.
func TestPlanAppLaunchesRunsOfItsOwnModes(t *testing.T) {
	t.Parallel()
	b := setupPlans(t, 1)
	ctx := context.Background()
	org, _, err := b.stores[0].CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME", Plan: "team"})
	require.NoError(t, err)
	validator, err := policies.NewModeValidator(ctx, policies.Config{})
	require.NoError(t, err)
	authoring, err := modes.NewService(modes.Deps{Access: b.access[0], Store: b.stores[0], Catalog: b.catalog, Policy: validator})
	require.NoError(t, err)
	owner := &access.Principal{Kind: core.PrincipalSession, Person: &core.Person{ID: "person_own"}, Role: core.RoleOwner, Org: org}
	saved, err := authoring.Save(ctx, owner, modes.SaveRequest{Spec: json.RawMessage(acmeSpec)})
	require.NoError(t, err)
	_, err = authoring.Release(ctx, owner, saved.Mode.ID, 0)
	require.NoError(t, err)
	queue, err := jobs.NewQuestionQueue(b.pools[0], 0)
	require.NoError(t, err)
	launches, err := runs.NewService(runs.Config{}, runs.Deps{Access: b.access[0], Modes: b.svcs[0],
		Store: pgstore.NewBatches(b.pools[0], queue), Bank: execute.Bank{}, Catalog: b.catalog})
	require.NoError(t, err)
	p := app(org, "person_ada")
	launch := func(model string) (*runs.Acceptance, error) {
		return launches.Test(ctx, p, runs.Key{Derive: true},
			&runs.TestRequest{Model: json.RawMessage(`"` + model + `"`), Buckets: json.RawMessage(`{"light":1}`)})
	}

	_, err = launch("conclave-standard")
	require.Equal(t, core.CodeModeNotOwned, core.AsError(err).Code, "%v", err)
	require.Equal(t, core.TrialCredit, b.balance(t, org.ID).Balance)

	acc, err := launch(saved.Mode.ID)
	require.NoError(t, err)
	require.Positive(t, acc.Quote.Cost)
	require.Equal(t, acc.Quote.Cost, acc.Batch.Billed)
	require.Equal(t, "person_ada", acc.Batch.PersonID)
	require.Equal(t, core.TrialCredit-acc.Quote.Cost, b.balance(t, org.ID).Balance, "charged to the organisation at the run's price")
	again, err := launch(saved.Mode.ID)
	require.NoError(t, err)
	require.True(t, again.Replayed, "the same launch by the same app is the same batch")
	require.Equal(t, acc.Batch.ID, again.Batch.ID)
}

// acmeSpec is a mode an organisation authors: conclave-standard's panel.
const acmeSpec = `{"name": "Acme Review Panel", "ticker": "PANL",
	"use_when": "Trade-offs where a second and a third opinion are worth a few cents.",
	"description": "Three seats from three provider families.",
	"seats_by_tier": {
		"experience": [
			{"engine": "sim/swift", "backup": "sim/gemini-flash"},
			{"engine": "sim/gemini-flash", "backup": "sim/swift"},
			{"engine": "sim/sonnet", "backup": "sim/swift"}],
		"plus": [
			{"engine": "sim/atlas", "backup": "sim/gemini-flash"},
			{"engine": "sim/sonnet", "backup": "sim/atlas"},
			{"engine": "sim/gemini-flash", "backup": "sim/sonnet"}]},
	"staff": {
		"classifier": {"engine": "sim/swift"},
		"judge": {"engine": "sim/sonnet", "backup": "sim/atlas"},
		"synthesis": {"engine": "sim/atlas", "backup": "sim/sonnet"}},
	"critique": "deep", "max_rounds": 2, "quorum": 2, "straggler_deadline_s": 20,
	"express_threshold": 0.2, "cost_ceiling_usd": 1.5,
	"api_commercial": {"price_tier": "standard", "q_surcharge_by_depth": {"light": 0.05, "medium": 0.10, "deep": 0.15},
		"q_surcharge_usd": 0.15}}`

// A connected app's requests are counted against its plan's rate, per
// person: past it, rate_limit_exceeded with Retry-After; another person of
// the organisation, and the same person on the pages, have their own.
func TestPlanRateIsPerPerson(t *testing.T) {
	t.Parallel()
	b := setupPlans(t, 1)
	ctx := context.Background()
	org := b.org(t, "slow")
	estimate := func(p *access.Principal) error {
		_, err := b.svcs[0].Estimate(ctx, p, calls.Call{RequestID: core.NewID("req")}, &calls.EstimateParams{
			Model: "conclave-standard", Tier: core.TierPlus, Messages: []core.Message{{Role: core.RoleUser, Content: "Worth it?"}}})
		return err
	}
	require.NoError(t, estimate(app(org, "person_ada")))
	require.NoError(t, estimate(app(org, "person_ada")))
	e := core.AsError(estimate(app(org, "person_ada")))
	require.Equal(t, core.CodeRateLimitExceeded, e.Code, "the plan's two requests a minute: %v", e)
	require.Positive(t, e.RetryAfter)
	require.NoError(t, estimate(app(org, "person_bea")), "another person has their own rate")
	require.NoError(t, estimate(session(org, "person_ada")), "and the person on the pages theirs (60 a minute)")
}
