package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/conclavehq/conclave/core"
)

// rateWindow is the span a per-minute budget covers: a key may spend its
// whole budget at once, then one request per emission interval.
const rateWindow = time.Minute

// gcra is a per-minute budget's emission interval and tolerance: the whole
// budget at once, then one request per interval. Zero for no limit.
func gcra(perMinute int) (interval, tolerance time.Duration) {
	if perMinute <= 0 {
		return 0, 0
	}
	interval = rateWindow / time.Duration(perMinute)
	return interval, rateWindow - interval
}

// LeaseRate implements access.RateLeaser: it gives back back unspent
// requests of keyID's budget, then takes up to want requests of it at
// perMinute, in one statement (lease_rate, migration 0028). granted is 0
// with the wait until a request fits when none does.
func (s *Store) LeaseRate(ctx context.Context, keyID string, perMinute, want, back int) (int, time.Duration, error) {
	interval, tolerance := gcra(perMinute)
	if interval <= 0 || want < 1 || back < 0 {
		return 0, 0, fmt.Errorf("leasing the rate of %s: a rate and a lease of at least one request are required", keyID)
	}
	var granted int
	var waitUS int64
	if err := s.pool.QueryRow(ctx, q("LeaseRate"), keyID, interval.Microseconds(), tolerance.Microseconds(), want,
		(time.Duration(back)*interval).Microseconds()).Scan(&granted, &waitUS); err != nil {
		return 0, 0, fmt.Errorf("leasing the rate of %s: %w", keyID, translate(err))
	}
	return granted, time.Duration(waitUS) * time.Microsecond, nil
}

// ReleaseSlot implements core.Admission.
func (s *Store) ReleaseSlot(ctx context.Context, orgID, requestID string) error {
	if _, err := s.pool.Exec(ctx, q("FreeSlot"), orgID, requestID); err != nil {
		return fmt.Errorf("releasing the slot of %s: %w", requestID, translate(err))
	}
	return nil
}

// ReleaseClaim implements core.Admission.
func (s *Store) ReleaseClaim(ctx context.Context, orgID, key, requestID string) error {
	if _, err := s.pool.Exec(ctx, q("ReleaseClaim"), orgID, key, requestID); err != nil {
		return fmt.Errorf("releasing the idempotency claim of %s: %w", requestID, translate(err))
	}
	return nil
}

// RenewLeases implements core.Admission.
func (s *Store) RenewLeases(ctx context.Context, requestIDs []string, lease time.Duration) error {
	if len(requestIDs) == 0 {
		return nil
	}
	var holds, slots, claims int64
	if err := s.pool.QueryRow(ctx, q("RenewLeases"), requestIDs, lease.Microseconds()).Scan(&holds, &slots, &claims); err != nil {
		return fmt.Errorf("renewing %d leases: %w", len(requestIDs), translate(err))
	}
	return nil
}

// Admit implements core.Admission with one call of admit_call.
func (s *Store) Admit(ctx context.Context, p *core.AdmitParams) (*core.AdmitResult, error) {
	interval, tolerance := gcra(p.PerMinute)
	hash := p.RequestHash
	if hash == nil {
		hash = []byte{}
	}
	var holdID string
	var quota any
	if p.Hold.Amount > 0 {
		holdID = core.NewID("hold")
		if p.Hold.MonthlyQuota != nil {
			quota = int64(*p.Hold.MonthlyQuota)
		}
	}
	var personAllowance any
	if p.PersonAllowance != nil {
		personAllowance = int64(*p.PersonAllowance)
	}
	month := core.MonthStart(time.Now())
	var (
		outcome                  string
		wait, spent, holdAmount  *int64
		claimState, claimReqID   *string
		claimHash                []byte
		holdCreated, holdExpires *time.Time
	)
	err := s.pool.QueryRow(ctx, q("AdmitCall"),
		p.KeyID, interval.Microseconds(), tolerance.Microseconds(),
		p.OrgID, p.RequestID, p.SlotLimit, p.Lease.Microseconds(),
		p.IdempotencyKey, hash,
		holdID, int64(p.Hold.Amount), quota, int64(p.Hold.ActivationAllowance), month,
		p.PersonID, p.PersonSlots, personAllowance, int64(p.MinHold),
	).Scan(&outcome, &wait, &claimState, &claimReqID, &claimHash, &spent, &holdCreated, &holdExpires, &holdAmount)
	if err != nil {
		return nil, fmt.Errorf("admitting %s: %w", p.RequestID, translate(err))
	}
	a := &core.AdmitResult{}
	switch outcome {
	case "ok":
		if p.Hold.Amount > 0 {
			// The amount held: the one asked for, or less when the
			// person's allowance lowered it.
			a.Hold = &core.Hold{ID: holdID, OrgID: p.OrgID, RequestID: p.RequestID, Amount: core.Micros(*holdAmount), State: core.HoldHeld,
				CreatedAt: *holdCreated, ExpiresAt: *holdExpires}
		}
	case "rate_limited":
		a.Refused = core.ErrRateLimited
		if wait != nil {
			a.RetryAfter = time.Duration(*wait) * time.Microsecond
		}
	case "no_slot":
		a.Refused = core.ErrNoSlot
	case "person_busy":
		a.Refused = core.ErrPersonBusy
	case "plan_limit":
		a.Refused = core.ErrPlanLimit
		if spent != nil {
			a.PersonSpent = core.Micros(*spent)
		}
	case "claimed":
		a.Refused = core.ErrClaimed
		a.Claim = &core.Claim{State: core.ClaimState(*claimState), RequestID: *claimReqID, RequestHash: claimHash}
	case "quota":
		a.Refused = core.ErrQuotaExceeded
	case "allowance":
		a.Refused = core.ErrVerificationRequired
	case "no_billing":
		a.Refused = core.ErrNoBilling
	case "insufficient":
		a.Refused = core.ErrInsufficientFunds
	case "no_org":
		a.Refused = core.ErrNotFound
	default:
		return nil, fmt.Errorf("admitting %s: unknown outcome %q", p.RequestID, outcome)
	}
	return a, nil
}

var _ core.Admission = (*Store)(nil)
