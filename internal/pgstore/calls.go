package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conclavehq/conclave/core"
)

func scanHold(row pgx.Row) (*core.Hold, error) {
	var h core.Hold
	if err := row.Scan(&h.ID, &h.OrgID, &h.RequestID, &h.Amount, &h.State, &h.CreatedAt, &h.ExpiresAt, &h.SettledAt); err != nil {
		return nil, translate(err)
	}
	return &h, nil
}

// PlaceHold implements core.Admission.
func (s *Store) PlaceHold(ctx context.Context, p *core.PlaceHoldParams) (*core.Hold, error) {
	if p.Amount <= 0 {
		return nil, fmt.Errorf("placing hold: amount %s is not positive", p.Amount)
	}
	if p.RequestID == "" {
		return nil, errors.New("placing hold: request id is empty")
	}
	ttl := p.TTL
	if ttl <= 0 {
		ttl = core.DefaultHoldTTL
	}
	// admit_call with only the hold: the spend rules and the reservation
	// live there, once.
	a, err := s.Admit(ctx, &core.AdmitParams{OrgID: p.OrgID, RequestID: p.RequestID, Lease: ttl, Hold: *p})
	if err == nil && a.Refused != nil {
		err = a.Refused
	}
	if err != nil {
		return nil, fmt.Errorf("placing a %s hold for %s: %w", p.Amount, p.RequestID, err)
	}
	return a.Hold, nil
}

// closedHoldError explains why a hold of the organisation could not be
// closed: it does not exist for that organisation, or it is no longer held.
func closedHoldError(ctx context.Context, tx interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, holdID, orgID string) (*core.Hold, error) {
	h, err := scanHold(tx.QueryRow(ctx, q("GetHold"), holdID, orgID))
	if err != nil {
		return nil, err
	}
	return h, fmt.Errorf("%w: hold is %s", core.ErrConflict, h.State)
}

// SettleCall implements core.Admission.
func (s *Store) SettleCall(ctx context.Context, p *core.SettleCallParams) (*core.Balance, error) {
	if p.Billed < 0 {
		return nil, fmt.Errorf("settling hold %s: billed %s is negative", p.HoldID, p.Billed)
	}
	if r := p.Receipt; r != nil && r.Billed != p.Billed {
		return nil, fmt.Errorf("settling hold %s: receipt bills %s, settlement %s", p.HoldID, r.Billed, p.Billed)
	}
	// One round trip whatever the receipt holds: settle_call and the
	// receipt's rows in one transaction (when settle_call refuses, nothing
	// of it is kept), then a second transaction that makes it durable.
	//
	// The settlement's transaction commits without waiting for the disk,
	// so the balance row it locks is free again as soon as it commits,
	// not after the disk flush; then DurableMark, committed synchronously
	// in the same batch, waits for the log up to and past that commit to
	// reach the disk. SettleCall returns only after both, so the caller is
	// answered only once the charge is durable. See docs/rationale.md.
	requestID := ""
	if p.Receipt != nil {
		if requestID = p.Receipt.RequestID; requestID == "" {
			if err := s.pool.QueryRow(ctx, q("HoldRequest"), p.HoldID, p.OrgID).Scan(&requestID); err != nil {
				return nil, fmt.Errorf("settling hold %s: %w", p.HoldID, translate(err))
			}
		}
	}
	batch, err := s.settleBatch(p, requestID)
	if err != nil {
		return nil, fmt.Errorf("settling hold %s: %w", p.HoldID, err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("settling hold %s: %w", p.HoldID, translate(err))
	}
	defer conn.Release() // releasing twice is harmless
	var bal core.Balance
	br := conn.SendBatch(ctx, batch)
	// The results, in the batch's order; the first failure skips the rest.
	exec := func(what string) {
		if err == nil {
			if _, err = br.Exec(); err != nil && what != "" {
				err = fmt.Errorf("%s: %w", what, err)
			}
		}
	}
	exec("") // Begin
	exec("") // CommitWithoutWaiting
	if p.Receipt != nil {
		exec("writing the receipt")
	}
	if err == nil {
		err = br.QueryRow().Scan(&bal.OrgID, &bal.Balance, &bal.Held, &bal.TrialRemaining, &bal.UpdatedAt)
	}
	exec("committing") // the ledger's deferred checks run here
	committed := err == nil
	exec("waiting for the settlement to reach the disk")
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if conn.Conn().PgConn().TxStatus() == 'E' {
		// A refusal leaves the failed transaction open: end it, so the
		// connection goes back to the pool rather than being closed.
		if _, rerr := conn.Exec(context.WithoutCancel(ctx), q("Rollback")); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	// The connection goes back now: confirming or explaining below takes
	// one of its own from the pool.
	conn.Release()
	if committed && err != nil {
		// Committed, but not known to be on disk (the connection or the
		// server went away): find out, so that a settlement is never
		// reported unbilled when it was kept, nor billed when it was lost.
		err = s.confirmSettled(ctx, p.HoldID, p.OrgID, err)
	}
	if err = s.settleError(ctx, p, err); err != nil {
		return nil, fmt.Errorf("settling hold %s: %w", p.HoldID, err)
	}
	return &bal, nil
}

// settleBatch is a settlement's one trip: its transaction, committed
// without waiting for the disk, then the durable mark that waits for it.
func (s *Store) settleBatch(p *core.SettleCallParams, requestID string) (*pgx.Batch, error) {
	batch := &pgx.Batch{}
	batch.Queue(q("Begin"))
	batch.Queue(q("CommitWithoutWaiting"))
	// The receipt first: settle_call takes the organisation's balance row,
	// which every call of the organisation updates, so it goes last, just
	// before the commit (see 0009_hot_rows_last.sql). If settle_call then
	// refuses, the receipt goes with the rest.
	if p.Receipt != nil {
		if err := queueReceipt(batch, p.Receipt, p.OrgID, p.HoldID, requestID); err != nil {
			return nil, err
		}
	}
	batch.Queue(q("SettleCallFn"), p.HoldID, p.OrgID, requestID, int64(p.Billed), p.IdempotencyKey, string(p.ClaimState))
	batch.Queue(q("Commit"))
	batch.Queue(s.marks.settleSQL())
	return batch, nil
}

// settleError says why a settlement was refused, in core's terms: a hold
// no longer live (and why), a claim no longer the call's, a receipt the
// database refused; nil for none.
func (s *Store) settleError(ctx context.Context, p *core.SettleCallParams, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "CC001" || pgErr.ConstraintName == "receipts_pkey"):
		// Not live: say why (another organisation's, settled, released). A
		// repeated settlement with its receipt meets the receipt first.
		_, err = closedHoldError(ctx, s.pool, p.HoldID, p.OrgID)
		return err
	case errors.As(err, &pgErr) && pgErr.Code == "CC002":
		return fmt.Errorf("%w: the idempotency claim on the key is no longer this call's", core.ErrConflict)
	case errors.As(err, &pgErr) && pgErr.Code == "CC003":
		return fmt.Errorf("receipt: %s", pgErr.Message)
	}
	return translate(err)
}

// durableMarks are the statements that make a settlement durable; empty
// fields mean DurableMark and a confirmation window of settleConfirmFor.
type durableMarks struct {
	settle, confirm string
	confirmFor      time.Duration
}

// settleConfirmFor is how long SettleCall keeps trying to learn whether a
// committed settlement whose durable mark failed was kept: long enough
// for PostgreSQL to restart after a crash.
const settleConfirmFor = 10 * time.Second

func (m durableMarks) settleSQL() string  { return cmp.Or(m.settle, q("DurableMark")) }
func (m durableMarks) confirmSQL() string { return cmp.Or(m.confirm, q("DurableMark")) }

// confirmSettled learns whether the settlement of holdID, committed but
// not known to be on disk (markErr), was kept. A durable mark on any
// connection puts every commit before it on disk, and after a crash only
// what reached the disk is there; so a mark followed by the hold's state
// tells. It returns nil when the hold is settled and durable; the
// settlement's loss when the hold is not settled (nothing was billed); and
// core.ErrOutcomeUnknown when the database cannot be reached within the
// window.
func (s *Store) confirmSettled(ctx context.Context, holdID, orgID string, markErr error) error {
	deadline := time.Now().Add(cmp.Or(s.marks.confirmFor, settleConfirmFor))
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		batch := &pgx.Batch{}
		batch.Queue(s.marks.confirmSQL())
		batch.Queue(q("GetHold"), holdID, orgID)
		br := s.pool.SendBatch(ctx, batch)
		state := "gone" // the admission was lost too
		_, err := br.Exec()
		if err == nil {
			var h *core.Hold
			if h, err = scanHold(br.QueryRow()); err == nil {
				state = string(h.State)
			} else if errors.Is(err, core.ErrNotFound) {
				err = nil
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		switch {
		case err == nil && state == string(core.HoldSettled):
			return nil
		case err == nil:
			return fmt.Errorf("the settlement was lost with the database (the hold is %s): %w", state, markErr)
		case time.Now().Add(wait).After(deadline):
			return fmt.Errorf("%w: the settlement was committed but could not be confirmed on disk: %w (confirming: %w)", core.ErrOutcomeUnknown, markErr, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", core.ErrOutcomeUnknown, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// journal records a debit of amount from the organisation's balance to a
// system account as one posting; a negative amount is a credit from the
// account to the balance (a refund). The caller updates the balance row in
// the same transaction.
func journal(ctx context.Context, tx pgx.Tx, orgID, kind, memo, to string, amount core.Micros) error {
	var postingID int64
	var at time.Time
	if err := tx.QueryRow(ctx, q("InsertPosting"), kind, orgID, memo).Scan(&postingID, &at); err != nil {
		return translate(err)
	}
	if _, err := tx.Exec(ctx, q("InsertLeg"), postingID, core.AccountOrgBalance, orgID, -int64(amount)); err != nil {
		return translate(err)
	}
	if _, err := tx.Exec(ctx, q("InsertLeg"), postingID, to, nil, int64(amount)); err != nil {
		return translate(err)
	}
	return nil
}

// ReleaseHold implements core.Admission.
func (s *Store) ReleaseHold(ctx context.Context, holdID, orgID string) error {
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var amount int64
		var requestID string
		err := tx.QueryRow(ctx, q("ReleaseHold"), holdID, orgID).Scan(&amount, &requestID)
		if errors.Is(err, pgx.ErrNoRows) {
			h, err := closedHoldError(ctx, tx, holdID, orgID)
			if h != nil && h.State == core.HoldReleased {
				return nil // released already: releasing is idempotent
			}
			return err
		}
		if err != nil {
			return translate(err)
		}
		if _, err = scanBalance(tx.QueryRow(ctx, q("ChargeHeld"), orgID, amount, int64(0))); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, q("FreeSlot"), orgID, requestID)
		return translate(err)
	})
	if err != nil {
		return fmt.Errorf("releasing hold %s: %w", holdID, err)
	}
	return nil
}

// queueReceipt queues the receipt of requestID with its seat and staff rows:
// one statement. settle_call, after it in the same transaction, refuses a
// hold whose request is not requestID, and the receipt is undone with it.
func queueReceipt(b *pgx.Batch, r *core.Receipt, orgID, holdID, requestID string) error {
	var bestSeat []byte
	if r.BestSeat != nil {
		var err error
		if bestSeat, err = json.Marshal(r.BestSeat); err != nil {
			return fmt.Errorf("encoding best seat: %w", err)
		}
	}
	seatsUnavailable, err := json.Marshal(emptyIfNil(r.SeatsUnavailable))
	if err != nil {
		return fmt.Errorf("encoding unavailable seats: %w", err)
	}
	staffUnavailable, err := json.Marshal(emptyIfNil(r.StaffUnavailable))
	if err != nil {
		return fmt.Errorf("encoding unavailable staff: %w", err)
	}
	var response any
	if len(r.Response) > 0 {
		response = []byte(r.Response)
	}
	var capCredit any
	if r.CapCredit != nil {
		capCredit = int64(*r.CapCredit)
	}
	// created_at is when the call was received: as given, else its
	// completion less its latency, else the time of writing.
	var received any
	switch {
	case !r.CreatedAt.IsZero():
		received = r.CreatedAt
	case r.CompletedAt != nil && r.LatencyMS != nil:
		received = r.CompletedAt.Add(-time.Duration(*r.LatencyMS) * time.Millisecond)
	}
	calls, err := encodeReceiptCalls(r)
	if err != nil {
		return err
	}
	b.Queue(q("InsertReceipt"), requestID, orgID, holdID, r.Mode, r.ModeKey, r.ModeConfigHash, r.Status,
		int64(r.Billed), int64(r.TokenCharge), int64(r.Surcharge), int64(r.PlatformFee), capCredit,
		r.PromptTokens, r.CompletionTokens, r.Rounds, r.SeatCount, r.Payer, nullString(string(r.Lane)),
		r.DifficultyScore, nullString(r.TaskType), nullString(r.HallucinationRisk), r.MinorityInsightLikely,
		bestSeat, seatsUnavailable, staffUnavailable, r.LatencyMS, response, r.CompletedAt, received, calls,
		nullIf(r.ModeVersion), nullString(r.KeyID), nullString(r.PayerKind), nullString(r.PersonID),
		nullString(r.FinishReason), r.Substituted, nullString(r.TraceID),
	)
	return nil
}

// storedCall is a receipt's call as stored in receipts.calls (0012): its
// kind and the fields of core.ReceiptCall, named as receipt_calls' columns
// were; the money in integer micro-USD, the times to the microsecond as
// PostgreSQL keeps them, and what is empty left out, so that a receipt's
// row stays small.
type storedCall struct {
	Kind string `json:"kind"` // "seat" or "staff"
	storedCallFields
}

// storedCallFields has core.ReceiptCall's fields, in its order, so that
// each converts to the other: a field added there fails to compile here
// until it is stored too.
type storedCallFields struct {
	Role          string      `json:"role"`
	ModelUsed     string      `json:"model_used"`
	OriginalModel string      `json:"original_model,omitempty"`
	FallbackUsed  *bool       `json:"fallback_used,omitempty"`
	JudgeScore    *float64    `json:"judge_score,omitempty"`
	IsBestSeat    *bool       `json:"is_best_seat,omitempty"`
	RoundNumber   *int        `json:"round_number,omitempty"`
	TokensIn      int         `json:"tokens_in"`
	TokensOut     int         `json:"tokens_out"`
	LatencyMS     *int64      `json:"latency_ms,omitempty"`
	StartedAt     time.Time   `json:"started_at"`
	EndedAt       time.Time   `json:"ended_at"`
	Source        string      `json:"source"`
	RealCost      core.Micros `json:"real_cost_micros"`
	FeeRatePPM    int64       `json:"fee_rate_ppm"`
	Fee           core.Micros `json:"fee_micros"`
	Content       string      `json:"content,omitempty"`
	Answered      bool        `json:"answered,omitempty"` // set by InsertReceipt when it drops Content
	Seat          string      `json:"seat,omitempty"`
	Hedged        bool        `json:"hedged,omitempty"`
	Attempt       string      `json:"attempt,omitempty"`
	ErrorClass    string      `json:"error_class,omitempty"`
}

// encodeReceiptCalls is the JSON array of r's calls for receipts.calls:
// seats, then staff, each in order. It refuses a call that receipt_calls'
// checks would have refused (validReceiptCall).
func encodeReceiptCalls(r *core.Receipt) ([]byte, error) {
	calls := make([]storedCall, 0, len(r.Seats)+len(r.Staff))
	for _, group := range []struct {
		kind  string
		calls []core.ReceiptCall
	}{{"seat", r.Seats}, {"staff", r.Staff}} {
		for i, c := range group.calls {
			if err := validReceiptCall(&c); err != nil {
				return nil, fmt.Errorf("receipt %s call %d (%s): %w", group.kind, i, c.Role, err)
			}
			c.StartedAt, c.EndedAt = c.StartedAt.Round(time.Microsecond), c.EndedAt.Round(time.Microsecond)
			calls = append(calls, storedCall{Kind: group.kind, storedCallFields: storedCallFields(c)})
		}
	}
	out, err := json.Marshal(calls)
	if err != nil {
		return nil, fmt.Errorf("encoding the receipt's calls: %w", err)
	}
	return out, nil
}

// validReceiptCall makes the checks receipt_calls made on each call: no
// negative tokens, cost or fee, and a fee rate within 0-100%.
func validReceiptCall(c *core.ReceiptCall) error {
	switch {
	case c.TokensIn < 0 || c.TokensOut < 0:
		return fmt.Errorf("negative tokens (%d in, %d out)", c.TokensIn, c.TokensOut)
	case c.RealCost < 0:
		return fmt.Errorf("negative cost %s", c.RealCost)
	case c.Fee < 0:
		return fmt.Errorf("negative fee %s", c.Fee)
	case c.FeeRatePPM < 0 || c.FeeRatePPM > 1_000_000:
		return fmt.Errorf("fee rate %d ppm is outside 0-1000000", c.FeeRatePPM)
	}
	return nil
}

// GetReceipt implements core.Receipts.
func (s *Store) GetReceipt(ctx context.Context, orgID, requestID string) (*core.Receipt, error) {
	var r core.Receipt
	var capCredit *int64
	var bestSeat, seatsUnavailable, staffUnavailable, response, calls []byte
	err := s.pool.QueryRow(ctx, q("GetReceipt"), requestID, orgID).Scan(
		&r.RequestID, &r.OrgID, &r.Mode, &r.ModeKey, &r.ModeConfigHash, &r.Status,
		&r.Billed, &r.TokenCharge, &r.Surcharge, &r.PlatformFee, &capCredit,
		&r.PromptTokens, &r.CompletionTokens, &r.Rounds, &r.SeatCount, &r.Payer, &r.Lane,
		&r.DifficultyScore, &r.TaskType, &r.HallucinationRisk, &r.MinorityInsightLikely,
		&bestSeat, &seatsUnavailable, &staffUnavailable, &r.LatencyMS, &response, &r.CreatedAt, &r.CompletedAt, &calls,
		(*nullInt)(&r.ModeVersion), &r.KeyID, &r.PayerKind, &r.PersonID, &r.FinishReason, &r.Substituted, &r.TranscriptDropped, &r.TraceID)
	if err != nil {
		return nil, translate(err)
	}
	if capCredit != nil {
		c := core.Micros(*capCredit)
		r.CapCredit = &c
	}
	if bestSeat != nil {
		r.BestSeat = new(core.BestSeat)
		if err := json.Unmarshal(bestSeat, r.BestSeat); err != nil {
			return nil, fmt.Errorf("reading receipt %s best seat: %w", requestID, err)
		}
	}
	if err := json.Unmarshal(seatsUnavailable, &r.SeatsUnavailable); err != nil {
		return nil, fmt.Errorf("reading receipt %s unavailable seats: %w", requestID, err)
	}
	if err := json.Unmarshal(staffUnavailable, &r.StaffUnavailable); err != nil {
		return nil, fmt.Errorf("reading receipt %s unavailable staff: %w", requestID, err)
	}
	if len(r.SeatsUnavailable) == 0 {
		r.SeatsUnavailable = nil
	}
	if len(r.StaffUnavailable) == 0 {
		r.StaffUnavailable = nil
	}
	if response != nil {
		r.Response = json.RawMessage(response)
	}

	var stored []storedCall
	if err := json.Unmarshal(calls, &stored); err != nil {
		return nil, fmt.Errorf("reading receipt %s calls: %w", requestID, err)
	}
	for _, sc := range stored {
		c := core.ReceiptCall(sc.storedCallFields)
		if sc.Kind == "seat" {
			r.Seats = append(r.Seats, c)
		} else {
			r.Staff = append(r.Staff, c)
		}
	}
	return &r, nil
}

func emptyIfNil(u []core.Unavailable) []core.Unavailable {
	if u == nil {
		return []core.Unavailable{}
	}
	return u
}

// nullString maps "" to NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

var _ core.Receipts = (*Store)(nil)
