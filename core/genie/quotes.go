package genie

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// approve_quote: a quote is approved by the principal it was made for and
// launches its run once, at no more than its price. The approval is
// recorded on the quote before anything is launched (approval_not_recorded
// when it cannot be); the launch goes through the launch endpoints' own
// service keyed "quote:<id>", so that approvals racing on several replicas
// launch one batch and a repeat answers it; the price is held to the
// quoted one by that same launch (runs.Key.MaxPrice), so the price
// compared is the price charged (docs/rationale.md).

// Reasons ask_genie gives for a recommended run without a quote that are
// not wire codes: they travel as an error's code to UnavailableReason and
// are never sent as an error.
const (
	// ReasonInvalidSpec: the recommended run's parameters are not a
	// launch the run service accepts.
	ReasonInvalidSpec core.Code = "invalid_spec"
	// ReasonQuoteNotStored: the quote was priced but could not be kept.
	ReasonQuoteNotStored core.Code = "quote_not_stored"
)

// Launcher launches and prices test runs and certifications: the launch
// endpoints' service (runs.Service).
type Launcher interface {
	Test(ctx context.Context, p *access.Principal, k runs.Key, req *runs.TestRequest) (*runs.Acceptance, error)
	Certify(ctx context.Context, p *access.Principal, k runs.Key, req *runs.CertifyRequest) (*runs.Acceptance, error)
	Batch(ctx context.Context, p *access.Principal, kind runs.Kind, id string) (*runs.Batch, error)
}

// QuotesDeps are what a Quotes service reads and calls.
type QuotesDeps struct {
	Runs  Launcher
	Store QuoteStore
	// HistoryOn is genie.chat_history: quotes are made and approved only
	// when the deployment keeps the assistant's conversations.
	HistoryOn bool
	// TTL is how long a quote may be approved. Defaults to
	// DefaultQuoteTTL.
	TTL time.Duration
	// InProgressWait is how long an approval waits on another approval of
	// the same quote launching (request_in_progress) before it answers
	// launch_failed. Defaults to 5s.
	InProgressWait time.Duration
	// Now defaults to time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Quotes makes quotes and approves them. Safe for concurrent use.
type Quotes struct{ d QuotesDeps }

// NewQuotes returns a Quotes service, or an error naming what is missing.
func NewQuotes(d QuotesDeps) (*Quotes, error) {
	if d.Runs == nil || d.Store == nil {
		return nil, errors.New("genie: Runs and Store are required")
	}
	if d.TTL <= 0 {
		d.TTL = DefaultQuoteTTL
	}
	if d.InProgressWait <= 0 {
		d.InProgressWait = 5 * time.Second
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Quotes{d: d}, nil
}

// ValidQuoteID reports whether s is a quote id: "qt_" and 20 characters
// of core.NewID's alphabet.
func ValidQuoteID(s string) bool {
	rest, ok := strings.CutPrefix(s, "qt_")
	if !ok || len(rest) != 20 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !strings.ContainsRune("0123456789abcdefghjkmnpqrstvwxyz", rune(rest[i])) {
			return false
		}
	}
	return true
}

// Make prices the run kind with request (a launch body without dry_run)
// by a dry run of the launch endpoints' service — their price rule — and
// keeps it as an open quote for p, expiring after the TTL. Its errors'
// codes are ask_genie's quote_unavailable (UnavailableReason).
func (s *Quotes) Make(ctx context.Context, p *access.Principal, kind runs.Kind, request json.RawMessage) (*Quote, error) {
	if !s.d.HistoryOn {
		return nil, core.Errorf(core.CodeChatHistoryRequired, "Quotes need the assistant's chat history, which this deployment keeps off.")
	}
	acc, err := s.launch(ctx, p, kind, request, runs.Key{}, true)
	if err != nil {
		return nil, err
	}
	now := s.d.Now()
	q := &Quote{
		ID: core.NewID("qt"), OrgID: p.Org.ID, Payer: PayerOf(p), Kind: kind, Request: request, Model: acc.Model,
		Price: acc.Quote.Cost, Questions: acc.Quote.Total, Minutes: acc.Quote.Minutes, Status: QuoteOpen,
		CreatedAt: now, ExpiresAt: now.Add(s.d.TTL),
	}
	if err := s.d.Store.CreateQuote(ctx, q); err != nil {
		return nil, core.Errorf(ReasonQuoteNotStored, "The quote could not be kept.").WithCause(err)
	}
	return q, nil
}

// launch sends request as a launch of kind keyed k, or as its dry run.
func (s *Quotes) launch(ctx context.Context, p *access.Principal, kind runs.Kind, request json.RawMessage, k runs.Key, dry bool) (*runs.Acceptance, error) {
	dryRun := json.RawMessage(nil)
	if dry {
		dryRun = json.RawMessage("true")
	}
	switch kind {
	case runs.KindTest:
		var r runs.TestRequest
		if err := json.Unmarshal(request, &r); err != nil {
			return nil, core.Errorf(ReasonInvalidSpec, "The run's parameters are not a test launch.").WithCause(err)
		}
		if r.DryRun = dryRun; dry {
			if _, err := runs.ParseTest(&r); err != nil {
				return nil, core.Errorf(ReasonInvalidSpec, "%s", core.AsError(err).Message).WithCause(err)
			}
		}
		return s.d.Runs.Test(ctx, p, k, &r)
	case runs.KindCertify:
		var r runs.CertifyRequest
		if err := json.Unmarshal(request, &r); err != nil {
			return nil, core.Errorf(ReasonInvalidSpec, "The run's parameters are not a certification launch.").WithCause(err)
		}
		if r.DryRun = dryRun; dry {
			if _, err := runs.ParseCertify(&r); err != nil {
				return nil, core.Errorf(ReasonInvalidSpec, "%s", core.AsError(err).Message).WithCause(err)
			}
		}
		return s.d.Runs.Certify(ctx, p, k, &r)
	}
	return nil, core.Errorf(ReasonInvalidSpec, "A quoted run is a test or a certification, not %q.", kind)
}

// Approve launches the run of p's quote id once, at no more than its
// price, and returns its acceptance and the quote as it then stands. A
// quote launched already answers its run again (Replayed). On requoted the
// new quote, when one could be made, is returned beside the error; nothing
// was launched.
func (s *Quotes) Approve(ctx context.Context, p *access.Principal, id string) (*runs.Acceptance, *Quote, error) {
	if !s.d.HistoryOn {
		return nil, nil, core.Errorf(core.CodeChatHistoryRequired,
			"Quotes need the assistant's chat history, which this deployment keeps off: launch the run with run_test or certify_mode.")
	}
	if !ValidQuoteID(id) {
		return nil, nil, core.Errorf(core.CodeInvalidQuoteID, "quote_id %q is not a quote id: send the quote_id (qt_…) the assistant gave.", id).
			WithParam("quote_id")
	}
	notFound := core.Errorf(core.CodeQuoteNotFound, "No quote %q was made for this key or sign-in.", id).WithParam("quote_id")
	q, err := s.d.Store.Quote(ctx, p.Org.ID, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil, nil, notFound
	case err != nil:
		return nil, nil, core.Errorf(core.CodeQuoteReadFailed, "The quote could not be read; nothing was launched. Retry shortly.").WithCause(err)
	case q.Payer != PayerOf(p):
		return nil, nil, core.Errorf(core.CodePayerMismatch,
			"Quote %s was made for another key or sign-in of your organisation, which alone may approve it; nothing was launched.", id).
			WithParam("quote_id")
	}
	if acc, done, err := s.settled(ctx, p, q); done {
		return acc, q, err
	}
	if q, err = s.d.Store.ApproveQuote(ctx, p.Org.ID, id, s.d.Now()); err != nil {
		if errors.Is(err, core.ErrNotFound) {
			return nil, nil, notFound
		}
		return nil, nil, core.Errorf(core.CodeApprovalNotRecorded,
			"The approval could not be recorded; nothing was launched or charged. Retry shortly.").WithCause(err)
	}
	// Another approval may have ended it meanwhile.
	if acc, done, err := s.settled(ctx, p, q); done {
		return acc, q, err
	}
	acc, err := s.launchOnce(ctx, p, q)
	if err != nil {
		return s.refused(ctx, p, q, err)
	}
	if acc.Batch == nil {
		// The spec: launch_refused, with the launch's status — 200 here.
		s.use(ctx, q)
		return nil, q, core.Errorf(core.CodeLaunchRefused, "The launch answered without a run; nothing was charged.").WithStatus(http.StatusOK)
	}
	if err := s.d.Store.SettleQuote(ctx, q.OrgID, q.ID, QuoteLaunched, acc.Batch.ID); err != nil {
		// The run is launched and its key answers it: a repeat finds it.
		s.d.Logger.WarnContext(ctx, "a launched quote was not marked launched", slog.String("quote_id", q.ID),
			slog.String("batch_id", acc.Batch.ID), slog.String("error", err.Error()))
	}
	q.Status, q.BatchID = QuoteLaunched, acc.Batch.ID
	return acc, q, nil
}

// settled answers an approval of a quote that is no longer open: its run
// again for a launched one; quote_already_used or quote_expired. done is
// false for an open quote.
func (s *Quotes) settled(ctx context.Context, p *access.Principal, q *Quote) (acc *runs.Acceptance, done bool, err error) {
	switch q.StatusAt(s.d.Now()) {
	case QuoteLaunched:
		b, err := s.d.Runs.Batch(ctx, p, q.Kind, q.BatchID)
		if err != nil {
			return nil, true, err
		}
		return &runs.Acceptance{Kind: b.Kind, Model: b.Model, ModeKey: b.ModeKey, Batch: b, Quote: b.Quote, Replayed: true}, true, nil
	case QuoteUsed:
		return nil, true, core.Errorf(core.CodeQuoteAlreadyUsed,
			"Quote %s was approved and its launch refused; ask the assistant for a new quote.", q.ID).WithParam("quote_id")
	case QuoteExpired:
		return nil, true, core.Errorf(core.CodeQuoteExpired, "Quote %s expired at %s; ask the assistant for a new quote.",
			q.ID, q.ExpiresAt.UTC().Format(time.RFC3339)).WithParam("quote_id")
	}
	return nil, false, nil
}

// launchOnce launches q's run keyed by the quote, waiting out another
// approval of it that is launching (request_in_progress) for up to
// InProgressWait.
func (s *Quotes) launchOnce(ctx context.Context, p *access.Principal, q *Quote) (*runs.Acceptance, error) {
	k := runs.Key{Value: "quote:" + q.ID, MaxPrice: q.Price}
	deadline := time.Now().Add(s.d.InProgressWait)
	wait := 20 * time.Millisecond
	for {
		acc, err := s.launch(ctx, p, q.Kind, q.Request, k, false)
		if err == nil || core.AsError(err).Code != core.CodeRequestInProgress || time.Now().Add(wait).After(deadline) {
			return acc, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// refused answers an approval whose launch failed with err: requoted with
// a new quote; launch_failed when the launch may have started or may yet
// (approving again answers it); otherwise the launch's refusal, its code
// passed on, and the quote used.
func (s *Quotes) refused(ctx context.Context, p *access.Principal, q *Quote, err error) (*runs.Acceptance, *Quote, error) {
	e := core.AsError(err)
	switch e.Code {
	case core.CodeInternalError, core.CodeServiceUnavailable, core.CodeRequestInProgress:
		return nil, q, core.Errorf(core.CodeLaunchFailed,
			"The run could not be confirmed started. Approve the same quote again: it answers the run if it started, and never launches twice.").
			WithCause(err)
	}
	s.use(ctx, q)
	switch e.Code {
	case core.CodeRequoted:
		re := core.Errorf(core.CodeRequoted, "%s Approve the new quote if you accept its price.", e.Message)
		nq, merr := s.Make(ctx, p, q.Kind, q.Request)
		if merr != nil {
			return nil, nil, core.Errorf(core.CodeRequoted, "%s No new quote could be made (%s).", e.Message, UnavailableReason(merr))
		}
		return nil, nq, re
	case core.CodeReconciliationRequired:
		return nil, q, core.Errorf(core.CodeReconciliationRequired,
			"An earlier approval of quote %s stopped before its launch was confirmed, and nothing was charged for it; ask the assistant for a new quote.", q.ID)
	case "":
		// A refusal without a code: launch_refused, with the launch's
		// status, or 502 when it has none (the spec).
		status := e.Status
		if status == 0 {
			status = http.StatusBadGateway
		}
		return nil, q, core.Errorf(core.CodeLaunchRefused, "The launch was refused: %s", e.Message).WithStatus(status)
	}
	return nil, q, e
}

// use marks q used: its approval ended without a run.
func (s *Quotes) use(ctx context.Context, q *Quote) {
	if err := s.d.Store.SettleQuote(context.WithoutCancel(ctx), q.OrgID, q.ID, QuoteUsed, ""); err != nil {
		s.d.Logger.WarnContext(ctx, "a refused quote was not marked used", slog.String("quote_id", q.ID), slog.String("error", err.Error()))
		return
	}
	q.Status = QuoteUsed
}

var _ Quoter = (*Quotes)(nil)
