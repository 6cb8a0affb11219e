// Package calls is the billed call, the same for every carrier: REST, the MCP
// tool server and benchmark runs call it as plain Go and render what it
// returns. A chat completion passes its admission (mode and policy, input
// limit, rate, concurrency slot, idempotency claim, money hold) in one trip
// to the store, is classified and deliberated, billed exactly, settled with
// its receipt and its stored answer in one transaction, and replayed to a
// repeat of its idempotency key. Once admitted, a deliberation runs to its
// end even when its caller leaves: it is billed once and its answer kept.
package calls

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/classify"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/telemetry"
)

// Deliberator plans a deliberation (classifies the question, picks the
// lane, projects its first round's cost; no seat fires) and executes the
// plan; *deliberate.Engine is one.
type Deliberator interface {
	Plan(ctx context.Context, req *deliberate.Request) (*deliberate.Plan, error)
	Execute(ctx context.Context, p *deliberate.Plan) (*deliberate.Result, error)
}

// Settlement closes a call's hold: settled with its bill and receipt, or
// released unbilled. core.Store satisfies it.
type Settlement interface {
	SettleCall(ctx context.Context, p *core.SettleCallParams) (*core.Balance, error)
	ReleaseHold(ctx context.Context, holdID, orgID string) error
}

// Receipts reads stored receipts. core.Store satisfies it.
type Receipts interface {
	GetReceipt(ctx context.Context, orgID, requestID string) (*core.Receipt, error)
}

// Config configures a Service.
type Config struct {
	// MaxInputTokens is the input limit of a key that sets none. Defaults
	// to 8000.
	MaxInputTokens int
	// CallCeilingFloor is the least a call's bill ceiling can be (the
	// ceiling is the higher of it and the mode's price, unless the key has
	// its own). Defaults to $2.00.
	CallCeilingFloor core.Micros
	// Lease is how long a call's hold, slot and idempotency claim live
	// unless renewed; live calls renew them every third of it. Defaults to
	// 30 s.
	Lease time.Duration
	// ConcurrencyRetryAfter is the Retry-After sent with
	// concurrency_limit_exceeded, and with request_in_progress for a mode
	// that has neither a finished deliberation on record nor a straggler
	// deadline to estimate one from. Defaults to 5 s.
	ConcurrencyRetryAfter time.Duration
	// RepeatWait is how long a repeat of an idempotency key whose call is
	// running in this process waits for that call to end before it answers
	// request_in_progress. A call that ends within it answers the repeat at
	// once: its replay, or, when it ended without an answer to replay, a
	// run of the repeat's own. A repeat whose caller leaves stops waiting.
	// Negative turns the wait off. Defaults to 20 s.
	RepeatWait time.Duration
	// ActivationAllowance is what an unverified organisation may spend
	// before verification_required. Defaults to $10.00.
	ActivationAllowance core.Micros
	// DeliberationTimeout bounds one deliberation, whether or not its
	// caller is still waiting; a deliberation past it is stopped and not
	// billed. Defaults to 10 minutes.
	DeliberationTimeout time.Duration
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxInputTokens == 0 {
		c.MaxInputTokens = 8000
	}
	if c.CallCeilingFloor == 0 {
		c.CallCeilingFloor = core.DefaultCeilingFloor
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.ConcurrencyRetryAfter == 0 {
		c.ConcurrencyRetryAfter = 5 * time.Second
	}
	if c.RepeatWait == 0 {
		c.RepeatWait = 20 * time.Second
	}
	if c.ActivationAllowance == 0 {
		c.ActivationAllowance = 10 * core.MicrosPerUSD
	}
	if c.DeliberationTimeout == 0 {
		c.DeliberationTimeout = 10 * time.Minute
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.MaxInputTokens < 0:
		return errors.New("calls: MaxInputTokens cannot be negative")
	case c.Lease < 300*time.Millisecond:
		return errors.New("calls: Lease must be at least 300ms")
	case c.DeliberationTimeout < 0:
		return errors.New("calls: DeliberationTimeout cannot be negative")
	}
	return nil
}

// Deps are the parts a Service calls.
type Deps struct {
	// Access supplies the caller's limits and policy decisions. Required.
	Access *access.Service
	// Admission runs a call's admission in one trip to the store and keeps
	// its leases. Required.
	Admission core.Admission
	// Settlement settles or releases a call's hold. Defaults to
	// Admission, which holds the hold's whole life; set it only to stand
	// between the service and the store (a test's faulty settlement).
	Settlement Settlement
	// Receipts reads stored receipts (replays, GET receipts). Required.
	Receipts Receipts
	// Outcomes records and reads what became of calls without a receipt.
	// Defaults to none: outcomes are neither recorded nor read.
	Outcomes core.Outcomes
	// Catalog holds the engines (their families, for listing modes).
	// Required.
	Catalog *core.Catalog
	// Modes is where the modes callers name come from. Defaults to
	// Catalog, the configured modes.
	Modes core.ModeSource
	// Deliberator runs chat completions; without one Chat answers
	// service_unavailable.
	Deliberator Deliberator
	// Classifier classifies questions for estimates when there is no
	// Deliberator (whose plan classifies them otherwise, exactly as a call
	// does). Defaults to the deterministic classify.Heuristic.
	Classifier deliberate.Classifier
	// TokensOver reports whether messages exceed a limit of input tokens,
	// and when they do, a count of them past the limit (not necessarily
	// their total: counting may stop there). It reads caller input before
	// any rate limit, so its cost must be bounded whatever the input, and
	// it returns ctx.Err() when ctx ends first: the caller left. Required.
	TokensOver func(ctx context.Context, messages []core.Message, limit int) (n int, over bool, err error)
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Telemetry traces each call's deliberation, admission, settlement and
	// provider calls (docs/observability.md). Defaults to none.
	Telemetry telemetry.Telemetry
}

// Service runs billed calls. Start it before use and Stop it when done; it
// is safe for concurrent use.
type Service struct {
	cfg     Config
	d       Deps
	log     *slog.Logger
	leases  *leaseKeeper
	latency *latencies

	mu       sync.Mutex
	base     context.Context // parent of every deliberation; nil until Start
	cancel   context.CancelFunc
	draining bool
	running  map[string]liveCall // request id → this process's live calls
	wg       sync.WaitGroup
}

// New returns a Service, or an error naming what is missing.
func New(cfg Config, d Deps) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	switch {
	case d.Access == nil || d.Admission == nil || d.Receipts == nil:
		return nil, errors.New("calls: Access, Admission and Receipts are required")
	case d.Catalog == nil || d.TokensOver == nil:
		return nil, errors.New("calls: Catalog and TokensOver are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Classifier == nil {
		d.Classifier = classify.Heuristic{}
	}
	if d.Modes == nil {
		d.Modes = d.Catalog
	}
	if d.Settlement == nil {
		d.Settlement = d.Admission
	}
	return &Service{
		cfg: cfg, d: d, log: d.Logger,
		leases:  newLeaseKeeper(d.Admission, cfg.Lease, d.Logger),
		latency: newLatencies(),
		running: map[string]liveCall{},
	}, nil
}

// liveCall is a call running in this process: when it began, and a channel
// closed once it has ended — settled, or given back what it held.
type liveCall struct {
	start time.Time
	done  chan struct{}
}

// Start begins keeping the leases of live calls; calls are taken from then
// on. Deliberations outlive the requests that started them, not ctx: Stop
// ends them.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base != nil {
		return errors.New("calls: already started")
	}
	s.base, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.leases.start(s.base)
	return nil
}

// Drain stops taking calls (each is refused with service_unavailable) and
// waits until every running deliberation has finished, billed and stored,
// or ctx ends, which it returns.
func (s *Service) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops taking calls, stops the deliberations still running (they
// release their holds unbilled) and waits for them to give back what they
// hold, then stops keeping leases. Safe to call twice.
func (s *Service) Stop() {
	s.mu.Lock()
	s.draining = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
	s.leases.stop()
}

// Running counts this process's calls in flight.
func (s *Service) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

// begin registers a call about to run; it returns the context the
// deliberation runs under, or an error when the service takes no calls.
func (s *Service) begin(requestID string) (context.Context, context.CancelFunc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base == nil || s.draining {
		return nil, nil, errNotTaking()
	}
	s.wg.Add(1)
	s.running[requestID] = liveCall{start: time.Now(), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(s.base, s.cfg.DeliberationTimeout)
	return ctx, cancel, nil
}

func (s *Service) end(requestID string) {
	s.mu.Lock()
	if c, ok := s.running[requestID]; ok {
		close(c.done)
		delete(s.running, requestID)
	}
	s.mu.Unlock()
	s.wg.Done()
}

// startedAt is when this process began the call requestID, if it runs here.
func (s *Service) startedAt(requestID string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.running[requestID]
	return c.start, ok
}

// ended returns a channel closed when the call requestID ends, or nil when
// that call is not running in this process.
func (s *Service) ended(requestID string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.running[requestID]; ok {
		return c.done
	}
	return nil
}

// taking reports whether the service takes calls now.
func (s *Service) taking() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base == nil || s.draining {
		return errNotTaking()
	}
	return nil
}

// errNotTaking refuses a call while the service is not started or drains.
func errNotTaking() *core.Error {
	e := core.Errorf(core.CodeServiceUnavailable, "This server is not taking calls (it is starting or shutting down); nothing was billed. Retry shortly.")
	e.RetryAfter = time.Second
	return e
}

// Deliberates reports whether the service runs chat completions (it was
// given a Deliberator).
func (s *Service) Deliberates() bool { return s.d.Deliberator != nil }
