package core

import "time"

// Plan is what an organisation's plan gives the people who use Conclave
// through connected apps (principal kind PrincipalOAuthApp): the highest
// tier and the modes they may call, and, per person, a monthly allowance,
// deliberations in flight and a request rate. Such usage is billed at real
// cost (BillInput.RealCost) to the organisation's balance. API keys and
// signed-in people are not bound by it. The operator configures plans
// (docs/plans.md); an organisation is on one, by name (Org.Plan).
type Plan struct {
	Name string
	// MaxTier is the highest tier a connected app may ask for.
	MaxTier Tier
	// Modes are the ids (or tickers) of the modes open to the plan; empty
	// opens every mode the organisation may use.
	Modes []string
	// Allowance is what one person may spend through connected apps in a
	// calendar month (UTC): settled bills and the holds of calls in
	// flight.
	Allowance Micros
	// Concurrency is how many deliberations one person may have in flight
	// through connected apps, across replicas.
	Concurrency int
	// RPM is one person's requests per minute through connected apps.
	RPM int
	// Configured is false for a plan name the deployment does not
	// configure (see Plans.Of).
	Configured bool
}

// Defaults of a plan's per-person limits.
const (
	DefaultPlanConcurrency = 2
	DefaultPlanRPM         = 60
)

// Plans are the configured plans by name. A Plans is read-only once built,
// and safe for concurrent use.
type Plans map[string]Plan

// Of is the plan called name: the configured one, or — for a name the
// deployment does not configure — a plan that holds connected apps to the
// lowest tier with no allowance (every billed call is plan_limit_reached),
// with the default per-person limits. Failing closed: an organisation put
// on a plan the operator forgot to configure spends nothing through apps.
func (ps Plans) Of(name string) Plan {
	if p, ok := ps[name]; ok {
		return p
	}
	return Plan{Name: name, MaxTier: TierExperience, Concurrency: DefaultPlanConcurrency, RPM: DefaultPlanRPM}
}

// PlanTier reads a plan's highest tier as configured: a tier's name, or
// "free", which names the lowest tier (experience) as plans are sold.
func PlanTier(s string) (Tier, bool) {
	if s == "free" {
		return TierExperience, true
	}
	t := Tier(s)
	return t, t.Rank() > 0
}

// AllowanceResets is when a monthly allowance counted at now starts again:
// the first instant of the next calendar month, UTC.
func AllowanceResets(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// MonthStart is the first instant of now's calendar month, UTC: where a
// monthly allowance or quota starts counting.
func MonthStart(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// PlanLimitReached is the refusal of a connected app's call once its
// person's monthly allowance under plan is used up, or what is left of it
// (spent is what the month's settled calls and calls in flight take) cannot
// pay for the call; it names the date the allowance resets.
func PlanLimitReached(plan Plan, spent Micros, now time.Time) *Error {
	if !plan.Configured {
		return Errorf(CodePlanLimitReached,
			"Your organisation's plan (%s) is not configured on this server, so connected apps have no allowance on it; "+
				"nothing was billed. Ask the operator to configure the plan or to move the organisation to one; "+
				"API keys are not affected.", plan.Name)
	}
	return Errorf(CodePlanLimitReached,
		"Your monthly allowance on your organisation's plan (%s) is $%s, and $%s of it is spent or held by calls in flight: "+
			"what is left cannot pay for this call, and nothing was billed. The allowance resets on %s (UTC).",
		plan.Name, plan.Allowance, min(max(spent, 0), plan.Allowance), AllowanceResets(now).Format(time.DateOnly))
}

// PersonBusy is the refusal of a connected app's call while its person
// already has the plan's deliberations in flight.
func PersonBusy(plan Plan, retryAfter time.Duration) *Error {
	e := Errorf(CodeTooManyConcurrent,
		"You already have %d deliberations in flight through connected apps, the limit of your organisation's plan (%s). "+
			"Retry after the time in Retry-After.", plan.Concurrency, plan.Name)
	e.RetryAfter = retryAfter
	return e
}
