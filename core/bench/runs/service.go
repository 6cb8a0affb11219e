package runs

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
)

// ModeResolver finds the mode a launch names and checks that the caller may
// use it; *calls.Service is one.
type ModeResolver interface {
	// ResolveMode finds the mode id names and checks that p may do action
	// with it at tier ("" for none): model_not_found, the policy's
	// refusal, or service_unavailable.
	ResolveMode(ctx context.Context, p *access.Principal, id, action string, tier core.Tier) (*core.Mode, error)
	// ModeConfigHash is the mode_config_hash of a mode ResolveMode
	// returned.
	ModeConfigHash(m *core.Mode) string
}

// Bank is the question bank (core/bench/bank): its version, and a seeded,
// stratified draw. The same seed and counts always draw the same
// questions from the same version.
type Bank interface {
	Version() string
	// Draw draws counts[b] questions of each bucket b, in bucket order
	// (light, medium, hard).
	Draw(seed int64, counts map[Bucket]int) ([]DrawnQuestion, error)
}

// DrawnQuestion is one question the bank drew.
type DrawnQuestion struct {
	ID     string
	Bucket Bucket
}

// Config configures a Service.
type Config struct {
	// TestLaunchesPerDay is how many test runs an organisation may launch
	// in any 24 hours. Defaults to 20.
	TestLaunchesPerDay int
	// CertifyLaunchesPerDay is how many certifications an organisation may
	// launch in any 24 hours. Defaults to 3.
	CertifyLaunchesPerDay int
	// Lease is how long a launch may take between claiming its
	// Idempotency-Key and committing before a repeat counts it as stopped.
	// Defaults to 30s.
	Lease time.Duration
	// ActivationAllowance is what an unverified organisation may spend
	// (calls and launches together) before verification_required. Defaults
	// to $10.00.
	ActivationAllowance core.Micros
	// DerivedKeyLapse is how long a derived key (Key.Derive) answers the
	// batch it launched: past it, the same launch is a new batch. Defaults
	// to an hour, far past any retry of a launch; the MCP tools'
	// descriptions state that hour.
	DerivedKeyLapse time.Duration
	// Pace is how fast the deployment works questions, for a launch's
	// estimated_minutes (Pace.Minutes). The zero Pace estimates the spec's
	// pace, a question a minute.
	Pace Pace
	// JudgingPerRead is the reference cost of one reading of a question by
	// every judge the deployment configures (modes.JudgingCost at one
	// repeat): what a test question's price never falls below, with its
	// deliberation and baseline, times the run's repeats (QuoteTest).
	// Defaults to 0.
	JudgingPerRead core.Micros
}

// LimitRetryAfter is the Retry-After of the daily launch limits.
const LimitRetryAfter = time.Hour

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.TestLaunchesPerDay == 0 {
		c.TestLaunchesPerDay = 20
	}
	if c.CertifyLaunchesPerDay == 0 {
		c.CertifyLaunchesPerDay = 3
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.ActivationAllowance == 0 {
		c.ActivationAllowance = 10 * core.MicrosPerUSD
	}
	if c.DerivedKeyLapse == 0 {
		c.DerivedKeyLapse = time.Hour
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.TestLaunchesPerDay < 1:
		return errors.New("runs: TestLaunchesPerDay must be at least 1")
	case c.CertifyLaunchesPerDay < 1:
		return errors.New("runs: CertifyLaunchesPerDay must be at least 1")
	case c.Lease < time.Second:
		return errors.New("runs: Lease must be at least 1s")
	case c.ActivationAllowance < 0:
		return errors.New("runs: ActivationAllowance cannot be negative")
	case c.DerivedKeyLapse < 0:
		return errors.New("runs: DerivedKeyLapse cannot be negative")
	case c.Pace.Workers < 0 || c.Pace.QuestionTime < 0:
		return errors.New("runs: Pace cannot be negative")
	}
	return nil
}

// Deps are the parts a Service calls.
type Deps struct {
	// Access decides what the caller may do. Required.
	Access *access.Service
	// Modes resolves the mode a launch names. Required.
	Modes ModeResolver
	// Store keeps launches and batches. Required.
	Store LaunchStore
	// Bank draws the questions. Required.
	Bank Bank
	// Catalog holds the engines whose prices a test question's projected
	// token charge is worked out with (QuoteTest). Required.
	Catalog *core.Catalog
	// JudgeWorking reports whether a judge's engine is working now; a
	// launch needing a judge that is not is provider_unavailable. Nil
	// means every judge works.
	JudgeWorking func(Judge) bool
	// JudgeConfigured reports whether the deployment names an engine for
	// a judge; a launch needing one it does not is provider_unavailable,
	// saying so. Nil means every judge is configured.
	JudgeConfigured func(Judge) bool
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

// Service launches test runs and certifications and answers their polls.
// It is safe for concurrent use.
type Service struct {
	cfg Config
	d   Deps
}

// NewService returns a Service, or an error naming what is missing.
func NewService(cfg Config, d Deps) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Access == nil || d.Modes == nil || d.Store == nil || d.Bank == nil || d.Catalog == nil {
		return nil, errors.New("runs: Access, Modes, Store, Bank and Catalog are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, d: d}, nil
}

// Acceptance is a launch's answer: a dry run's quote, or the batch
// launched (or, for a repeat of its Idempotency-Key, launched before).
type Acceptance struct {
	Kind    Kind
	Model   string
	ModeKey string
	DryRun  bool
	// Batch is the batch launched; nil on a dry run.
	Batch *Batch
	Quote *Quote
	// RequiresListing is set on a certification's dry run: whether the
	// mode must be listed before it can be certified.
	RequiresListing *bool
	// Replayed: the answer is a repeat's, for a batch launched before.
	Replayed bool
}

// Key is how a launch is keyed for idempotency.
type Key struct {
	// Value is the caller's Idempotency-Key; "" for none.
	Value string
	// Derive, when Value is "", keys the launch by itself: the
	// organisation, the API key, the launch as accepted and the version of
	// the mode it runs. A repeat of the same launch then answers the batch
	// the first launched, as a deliberation without a key is deduplicated,
	// until Config.DerivedKeyLapse after that launch; past it, the same
	// launch is a new batch. Without Derive (REST), a launch without a key
	// is always a new batch.
	Derive bool
	// MaxPrice, when positive, is the most the launch may cost: a launch
	// priced above it is refused with requoted and nothing is written or
	// charged, the price compared being the one the launch would charge.
	// A repeat of a key that launched answers its batch whatever its
	// price. approve_quote launches at no more than the quoted price
	// with it (core/genie).
	MaxPrice core.Micros
}

// Test launches a test run (or quotes it, on a dry run) for p, keyed by k.
func (s *Service) Test(ctx context.Context, p *access.Principal, k Key, req *TestRequest) (*Acceptance, error) {
	plan, err := ParseTest(req)
	if err != nil {
		return nil, err
	}
	return s.launch(ctx, p, k, plan)
}

// Certify launches a certification (or quotes it, on a dry run) for p,
// keyed by k.
func (s *Service) Certify(ctx context.Context, p *access.Principal, k Key, req *CertifyRequest) (*Acceptance, error) {
	plan, err := ParseCertify(req)
	if err != nil {
		return nil, err
	}
	return s.launch(ctx, p, k, plan)
}

// launch runs a parsed launch: the key's claim (real runs only), the mode,
// its price and the one transaction that charges it.
func (s *Service) launch(ctx context.Context, p *access.Principal, k Key, plan *Plan) (*Acceptance, error) {
	key := k.Value
	if key != "" {
		if err := calls.CheckIdempotencyKey(key); err != nil {
			return nil, err
		}
	}
	if plan.DryRun {
		acc, _, err := s.prepare(ctx, p, plan)
		return acc, err
	}
	derived := key == "" && k.Derive
	var lapse time.Duration
	if derived {
		var err error
		if key, err = s.derivedKey(ctx, p, plan); err != nil {
			return nil, err
		}
		lapse = s.cfg.DerivedKeyLapse
	}
	batchID := newUUID()
	if key != "" {
		hash := requestHash(p.RateID(), plan)
		claim, err := s.d.Store.ClaimLaunch(ctx, &ClaimLaunchParams{
			OrgID: p.Org.ID, Key: key, Kind: plan.Kind, RequestHash: hash, BatchID: batchID, Lease: s.cfg.Lease, Lapse: lapse,
		})
		if err != nil {
			return nil, core.Errorf(core.CodeServiceUnavailable, "The launch could not be recorded; nothing was started or charged. Retry shortly with the same Idempotency-Key.").WithCause(err)
		}
		if !claim.Won {
			return s.repeat(ctx, p, plan, hash, claim, derived)
		}
	}
	acc, b, err := s.prepare(ctx, p, plan)
	if err == nil && k.MaxPrice > 0 && acc.Quote.Cost > k.MaxPrice {
		err = core.Errorf(core.CodeRequoted, "The run now costs $%s, above the $%s it was quoted at; nothing was launched or charged.",
			acc.Quote.Cost, k.MaxPrice)
	}
	if err == nil {
		b.ID = batchID
		acc.Batch, err = s.commit(ctx, p, key, b, plan)
	}
	if err != nil {
		if derived && core.AsError(err).Code == core.CodeReconciliationRequired {
			err = reconciliationDerived(s.cfg.DerivedKeyLapse)
		}
		if key != "" && releasable(err) {
			if rerr := s.d.Store.ReleaseLaunch(context.WithoutCancel(ctx), p.Org.ID, key, batchID); rerr != nil {
				s.d.Logger.WarnContext(ctx, "a refused launch's idempotency claim was not released",
					slog.String("batch_id", batchID), slog.String("error", rerr.Error()))
			}
		}
		return nil, err
	}
	return acc, nil
}

// prepare resolves the plan's mode, checks the caller owns it (and, for a
// certification, that it is listed), prices it, and returns the answer of
// a dry run and the batch a real launch writes.
func (s *Service) prepare(ctx context.Context, p *access.Principal, plan *Plan) (*Acceptance, *Batch, error) {
	action := actionOf(plan.Kind)
	mode, err := s.d.Modes.ResolveMode(ctx, p, plan.Model, action, "")
	if err != nil {
		return nil, nil, err
	}
	if mustOwn(plan, p) && (mode.OwnerOrg == "" || mode.OwnerOrg != p.Org.ID) {
		msg := "A certification runs a mode your organisation owns; %s is not one of yours."
		if plan.Kind == KindTest {
			msg = "A test run billed to your organisation's plan runs a mode your organisation owns; %s is not one of yours."
		}
		return nil, nil, core.Errorf(core.CodeModeNotOwned, msg, mode.ID).WithParam("model")
	}
	if plan.Kind == KindCertify {
		plan.Tiers = []core.Tier{certifyTier(mode)}
	}
	for _, t := range plan.Tiers {
		if err := s.d.Access.Authorize(ctx, p, action, mode, t); err != nil {
			return nil, nil, err
		}
	}
	acc := &Acceptance{Kind: plan.Kind, Model: plan.Model, ModeKey: mode.Key, DryRun: plan.DryRun}
	if plan.Kind == KindCertify {
		acc.Quote = QuoteCertify(plan)
	} else if acc.Quote, err = QuoteTest(mode, plan, s.d.Catalog.Engines(), s.cfg.JudgingPerRead); err != nil {
		return nil, nil, err
	}
	waiting, err := s.d.Store.QueuedQuestions(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("counting the questions queued: %w", err)
	}
	acc.Quote.Minutes = s.cfg.Pace.Minutes(waiting.Ahead(p.Org.ID, acc.Quote.Total), acc.Quote.Total)
	if plan.Kind == KindCertify {
		listed := mode.Reach != nil && mode.Reach.Listing == core.ListingApproved
		if plan.DryRun {
			requires := !listed
			acc.RequiresListing = &requires
			return acc, nil, nil
		}
		if !listed {
			return nil, nil, core.Errorf(core.CodeListingRequired,
				"Mode %s is not listed in the marketplace: certification needs an approved listing. A dry run quotes it meanwhile.", mode.ID).WithParam("model")
		}
	}
	if plan.DryRun {
		return acc, nil, nil
	}
	if err := unconfigured(plan, s.d.JudgeConfigured); err != nil {
		return nil, nil, err
	}
	for _, j := range plan.Judges {
		if s.d.JudgeWorking != nil && !s.d.JudgeWorking(j) {
			return nil, nil, core.Errorf(core.CodeProviderUnavailable,
				"The judge %s has no working engine right now: its recent calls failed. Launch again in a few minutes%s.",
				j, otherJudges(plan.Kind)).WithParam("judges")
		}
	}
	b := &Batch{
		OrgID: p.Org.ID, PersonID: launcher(p), Kind: plan.Kind, Model: plan.Model, ModeID: mode.ID, ModeKey: mode.Key,
		ModeVersion: mode.Version, ModeConfigHash: s.d.Modes.ModeConfigHash(mode), Plan: plan,
		Seed: newSeed(), BankVersion: s.d.Bank.Version(), Status: StatusQueued, Billed: acc.Quote.Cost,
		Quote: acc.Quote,
	}
	return acc, b, nil
}

// actionOf is the action a launch of kind is.
func actionOf(kind Kind) string {
	if kind == KindCertify {
		return core.ActionCertifyCreate
	}
	return core.ActionTestsCreate
}

// certifyTier is the tier a certification runs its mode at: the default
// tier when the mode seats it, else the lowest tier it seats.
func certifyTier(m *core.Mode) core.Tier {
	if len(m.Deliberation.Seats[core.DefaultTier]) > 0 {
		return core.DefaultTier
	}
	for _, t := range core.Tiers {
		if len(m.Deliberation.Seats[t]) > 0 {
			return t
		}
	}
	return core.DefaultTier
}

// commit draws b's questions and launches it in the store's one
// transaction.
func (s *Service) commit(ctx context.Context, p *access.Principal, key string, b *Batch, plan *Plan) (*Batch, error) {
	drawn, err := s.d.Bank.Draw(b.Seed, plan.Counts)
	if err != nil {
		return nil, core.Errorf(core.CodeInternalError, "The questions could not be drawn; nothing was started or charged. Retry with the same Idempotency-Key.").WithCause(err)
	}
	if len(drawn) != plan.Drawn() {
		return nil, core.Errorf(core.CodeInternalError, "The question bank drew %d questions of the %d asked; nothing was started or charged.", len(drawn), plan.Drawn())
	}
	var qs []*Question
	for _, t := range plan.Tiers {
		for _, d := range drawn {
			qs = append(qs, &Question{BatchID: b.ID, Index: len(qs), Bucket: d.Bucket, Tier: t, QuestionID: d.ID, State: QuestionPending})
		}
	}
	if err := SharePrices(b, qs); err != nil {
		return nil, core.Errorf(core.CodeInternalError, "The launch could not be priced per question; nothing was started or charged.").WithCause(err)
	}
	limit := s.cfg.TestLaunchesPerDay
	if b.Kind == KindCertify {
		limit = s.cfg.CertifyLaunchesPerDay
	}
	lp := &LaunchParams{Batch: b, Questions: qs, IdempotencyKey: key, DailyLimit: limit, MonthlyQuota: p.Org.MonthlyQuota}
	if !p.Org.Verified() {
		lp.ActivationAllowance = s.cfg.ActivationAllowance
	}
	out, err := s.d.Store.Launch(ctx, lp)
	if err != nil {
		return nil, launchRefusal(err, b.Kind)
	}
	return out, nil
}

// errOutcomeUnknown marks a launch whose commit may or may not have
// happened: its claim is kept, for a repeat to find out.
var errOutcomeUnknown = errors.New("launch outcome unknown")

// releasable reports whether a launch refused with err left nothing
// written, so its claim may go: every refusal but an unknown outcome and a
// lost claim.
func releasable(err error) bool {
	return !errors.Is(err, errOutcomeUnknown) && core.AsError(err).Code != core.CodeReconciliationRequired
}

// launchRefusal is the answer to a launch the store refused.
func launchRefusal(err error, kind Kind) error {
	switch {
	case errors.Is(err, ErrDailyLimit):
		code, what := core.CodeTestLaunchLimitExceeded, "test runs"
		if kind == KindCertify {
			code, what = core.CodeCertifyLaunchLimitExceeded, "certifications"
		}
		e := core.Errorf(code, "The organisation has launched its daily limit of %s in the last 24 hours; nothing was charged. Retry after the time in Retry-After.", what)
		e.RetryAfter = LimitRetryAfter
		return e
	case errors.Is(err, ErrClaimLost):
		return reconciliation()
	case errors.Is(err, core.ErrVerificationRequired):
		return core.Errorf(core.CodeVerificationRequired, "The organisation is not verified and this launch would pass its activation allowance; nothing was charged.").WithCause(err)
	case errors.Is(err, core.ErrQuotaExceeded):
		return core.Errorf(core.CodeInsufficientBalance, "The launch would pass the organisation's monthly quota; nothing was charged.").WithCause(err)
	case errors.Is(err, core.ErrNoBilling):
		return core.Errorf(core.CodeInsufficientBalance, "The organisation has no billing configured (its trial credit expired and it never added funds); nothing was charged.").WithCause(err)
	case errors.Is(err, core.ErrInsufficientFunds):
		return core.Errorf(core.CodeInsufficientBalance, "The organisation's balance is too low for this launch, charged up front; nothing was charged.").WithCause(err)
	case errors.Is(err, core.ErrOutcomeUnknown):
		return core.Errorf(core.CodeInternalError, "The launch could not be confirmed. Retry with the same Idempotency-Key: it answers the batch if it was launched, and it is never charged twice.").WithCause(fmt.Errorf("%w: %w", errOutcomeUnknown, err))
	}
	return core.Errorf(core.CodeServiceUnavailable, "The launch could not be written; nothing was started or charged. Retry shortly.").WithCause(err)
}

func reconciliation() *core.Error {
	return core.Errorf(core.CodeReconciliationRequired,
		"An earlier launch with this Idempotency-Key stopped before it was confirmed; the key is retired. Launch with a new key.").WithParam("Idempotency-Key")
}

// reconciliationDerived is reconciliation_required for a derived key,
// which the caller never named.
func reconciliationDerived(lapse time.Duration) *core.Error {
	return core.Errorf(core.CodeReconciliationRequired,
		"An earlier launch with these same arguments stopped before it was confirmed, so it is not known to have started; nothing was charged for it. "+
			"Launch it with an idempotency key of your own, or repeat it %s after it stopped.", core.Spell(lapse))
}

// repeat answers a launch whose key another attempt holds; derived: the
// key was derived from the launch (Key.Derive).
func (s *Service) repeat(ctx context.Context, p *access.Principal, plan *Plan, hash []byte, c *LaunchClaim, derived bool) (*Acceptance, error) {
	if c.Kind != plan.Kind || !bytes.Equal(c.RequestHash, hash) {
		return nil, core.Errorf(core.CodeIdempotencyKeyReused,
			"This Idempotency-Key was used for a different launch (another body, endpoint or API key). Send a new key.").WithParam("Idempotency-Key")
	}
	switch c.State {
	case ClaimInFlight:
		e := core.Errorf(core.CodeRequestInProgress, "A launch with this Idempotency-Key is still being launched. Repeat it shortly for its batch.")
		if derived {
			e = core.Errorf(core.CodeRequestInProgress, "The same launch, with these arguments, is still being launched. Repeat it shortly for its batch.")
		}
		e.RetryAfter = max(time.Until(c.LockedUntil), time.Second)
		return nil, e
	case ClaimStopped:
		if derived {
			return nil, reconciliationDerived(s.cfg.DerivedKeyLapse)
		}
		return nil, reconciliation()
	}
	b, err := s.d.Store.Batch(ctx, p.Org.ID, c.BatchID)
	if err != nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "The batch this Idempotency-Key launched could not be read; nothing was launched again. Retry shortly.").WithCause(err)
	}
	return &Acceptance{Kind: b.Kind, Model: b.Model, ModeKey: b.ModeKey, Batch: b, Quote: b.Quote, Replayed: true}, nil
}

// Cancel cancels one of p's organisation's batches of kind, as
// LaunchStore.CancelBatch does — the questions nothing was answered to are
// cancelled and refunded, those with an answer are judged and charged —
// and returns it as it then stands: the refusals of Batch, and
// batch_finished for a batch complete, failed, being scored or with every
// question left answered. Cancelling a batch cancelled already answers it,
// and refunds nothing more.
func (s *Service) Cancel(ctx context.Context, p *access.Principal, kind Kind, id string) (*Batch, error) {
	seen, err := s.Batch(ctx, p, kind, id)
	if err != nil {
		return nil, err
	}
	// Cancelling is its own action: a member may cancel only the runs
	// they launched (the role table's "own").
	action := core.ActionTestsCancel
	if kind == KindCertify {
		action = core.ActionCertifyCancel
	}
	in := p.PolicyInput(action)
	in.Owner = seen.PersonID
	if err := s.d.Access.AuthorizeInput(ctx, in); err != nil {
		return nil, err
	}
	b, err := s.d.Store.CancelBatch(ctx, p.Org.ID, id)
	switch {
	case errors.Is(err, ErrBatchFinished):
		return nil, core.Errorf(core.CodeBatchFinished, "Batch %s has nothing left to cancel: it is complete or failed, "+
			"or every question left is answered and being judged or scored. Poll it for its result.", id).WithParam("batch_id")
	case errors.Is(err, core.ErrNotFound):
		return nil, core.Errorf(core.CodeBatchNotFound, "No %s batch %q was launched by your organisation.", kind, id).WithParam("batch_id")
	case err != nil:
		return nil, core.Errorf(core.CodeServiceUnavailable, "The batch could not be cancelled; nothing changed. Retry shortly.").WithCause(err)
	}
	return b, nil
}

// launcher is the person who launches a run as p: the person signed in, or
// the creator of p's key; "" when no person is behind p.
func launcher(p *access.Principal) string {
	switch {
	case p.Person != nil:
		return p.Person.ID
	case p.Key != nil:
		return p.Key.PersonID
	}
	return ""
}

// Batch reads one of p's organisation's batches of kind: missing_batch_id
// for an empty id, batch_not_found for an id that names no batch of kind
// the organisation launched — a malformed id included, since it cannot
// name one — and for a batch of a mode p's key may not see: the batch's
// mode is resolved and authorized for p, as a launch on it is, and a key
// limited to other modes gets the answer of an unknown id, word for word.
func (s *Service) Batch(ctx context.Context, p *access.Principal, kind Kind, id string) (*Batch, error) {
	action := core.ActionTestsRead
	if kind == KindCertify {
		action = core.ActionCertifyRead
	}
	if err := s.d.Access.Authorize(ctx, p, action, nil, ""); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, core.Errorf(core.CodeMissingBatchID, "Send batch_id: the id the launch answered.").WithParam("batch_id")
	}
	notFound := core.Errorf(core.CodeBatchNotFound, "No %s batch %q was launched by your organisation.", kind, id).WithParam("batch_id")
	if !ValidUUID(id) {
		return nil, notFound
	}
	b, err := s.d.Store.Batch(ctx, p.Org.ID, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil, notFound
	case err != nil:
		return nil, core.Errorf(core.CodeServiceUnavailable, "The batch could not be read. Retry shortly.").WithCause(err)
	case b.Kind != kind:
		return nil, notFound
	}
	// Any refusal of the batch's mode means the key may not see the batch.
	if _, err := s.d.Modes.ResolveMode(ctx, p, b.ModeID, action, ""); err != nil {
		if e := core.AsError(err); e.Code == core.CodeServiceUnavailable {
			return nil, e
		}
		return nil, notFound
	}
	return b, nil
}

// mustOwn reports whether the launch needs a mode the caller's
// organisation owns. The spec's endpoint text: "The mode must be one the
// caller can call and, for billing to a plan, one the caller owns" — a
// test run billed to the organisation's balance may run any mode the
// caller can call, configured ones included; a test run billed to a plan
// (a connected app) and every certification need the organisation's own
// mode (docs/rationale.md).
func mustOwn(plan *Plan, p *access.Principal) bool {
	return plan.Kind == KindCertify || p.OnPlan()
}

// derivedKey is the key of a launch keyed by itself (Key.Derive): the
// organisation, the API key (or the person acting without one), the plan
// as accepted, and the mode's version
// and configuration, so that a launch on a mode released since is another
// launch. Resolving the mode refuses what prepare would refuse first.
func (s *Service) derivedKey(ctx context.Context, p *access.Principal, plan *Plan) (string, error) {
	mode, err := s.d.Modes.ResolveMode(ctx, p, plan.Model, actionOf(plan.Kind), "")
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(plan)
	if err != nil {
		panic(fmt.Sprintf("encoding a launch plan: %v", err))
	}
	sum := sha256.New()
	for _, part := range []string{p.Org.ID, p.RateID(), string(b), mode.ID, strconv.Itoa(mode.Version), s.d.Modes.ModeConfigHash(mode)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		sum.Write(n[:])
		sum.Write([]byte(part))
	}
	return "derived:" + hex.EncodeToString(sum.Sum(nil)), nil
}

// requestHash identifies a launch for its Idempotency-Key: the API key that
// sent it (or the person acting without one, access.Principal.RateID) and
// its plan as accepted.
func requestHash(keyID string, plan *Plan) []byte {
	b, err := json.Marshal(plan)
	if err != nil {
		panic(fmt.Sprintf("encoding a launch plan: %v", err))
	}
	h := sha256.New()
	h.Write([]byte(keyID))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)
}

// newSeed is a random, non-negative draw seed.
func newSeed() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

// newUUID is a random (version 4) UUID in its canonical text form.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ValidUUID reports whether s is a UUID in its canonical text form
// (lowercase or uppercase hex, hyphenated 8-4-4-4-12).
func ValidUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

var _ ModeResolver = (*calls.Service)(nil)

// unconfigured refuses a launch whose plan needs judges the deployment
// names no engine for (judges: [] in its configuration), naming them all:
// provider_unavailable, as for a judge whose engine is down, since the
// launch needs a provider the server cannot reach (docs/rationale.md).
func unconfigured(plan *Plan, configured func(Judge) bool) error {
	if configured == nil {
		return nil
	}
	var missing []string
	for _, j := range plan.Judges {
		if !configured(j) {
			missing = append(missing, string(j))
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return core.Errorf(core.CodeProviderUnavailable,
			"The judge %s is not configured on this server: its operator's configuration names no engine for it, "+
				"so test runs and certifications that need it cannot be judged here.", missing[0]).WithParam("judges")
	}
	return core.Errorf(core.CodeProviderUnavailable,
		"The judges %s and %s are not configured on this server: its operator's configuration names no engine for them, "+
			"so test runs and certifications that need them cannot be judged here.",
		strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1]).WithParam("judges")
}

// otherJudges is the provider_unavailable message's hint for a test run,
// which may name other judges; a certification needs all three.
func otherJudges(k Kind) string {
	if k == KindTest {
		return ", or name other judges"
	}
	return ""
}
