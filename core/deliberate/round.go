package deliberate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
)

// seatState is a seat across rounds.
type seatState struct {
	role string
	seat core.Seat
	// primaryDown is set once the primary failed: later rounds go straight
	// to the backup.
	primaryDown bool
	// gone is set once primary and backup both failed.
	gone bool
}

// seatOutcome is a seat's result in one round.
type seatOutcome struct {
	role     string
	engine   string
	answered bool
	closedBy string
	hedged   bool
	text     string
	finish   string
	// outTokens is the answer's output tokens, which project the seat's
	// next answer.
	outTokens int
	reason    string // why it did not answer
	sub       *Substitution
}

// round runs one pass of the seats and closes it per the quorum rule. It
// returns the round's entry (without judgment) and each seat's outcome, in
// seat order; every call it started has ended when it returns.
//
// The first seat runs on the caller's goroutine and the others on their
// own; the quorum rule is applied as each seat ends and when the straggler
// deadline passes, so that no goroutine only waits for the seats.
func (r *run) round(ctx context.Context, n int, seats []*seatState, prompt func(*seatState) []core.Message, quorum int, hedge time.Duration) (Round, []*seatOutcome, error) {
	start := r.e.cfg.Now()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outs := make([]*seatOutcome, len(seats))
	need := quorum
	if need <= 0 {
		need = len(seats)
	}
	var (
		mu                     sync.Mutex
		pending, answered      = len(seats), 0
		passed, closedByQuorum bool
	)
	// closeOnQuorum closes the round once a quorum has answered and the
	// straggler deadline has passed, while seats remain. mu is held.
	closeOnQuorum := func() {
		if quorum > 0 && answered >= need && passed && pending > 0 && !closedByQuorum {
			closedByQuorum = true
			cancel()
		}
	}
	if quorum > 0 {
		t := time.AfterFunc(r.req.Mode.Deliberation.StragglerDeadline, func() {
			mu.Lock()
			defer mu.Unlock()
			passed = true
			closeOnQuorum()
		})
		defer t.Stop()
	}
	turn := func(i int) {
		s := seats[i]
		o := r.seat(rctx, n, s, prompt(s), hedge)
		mu.Lock()
		outs[i] = o
		pending--
		if o.answered {
			answered++
		}
		sofar := answered
		closeOnQuorum()
		mu.Unlock()
		if o.answered {
			r.req.observe(Progress{Stage: StageSeatAnswered, Round: n, Seats: len(seats), Answered: sofar, Seat: o.role})
		}
	}
	var wg sync.WaitGroup
	for i := 1; i < len(seats); i++ {
		seatWorkers.Go(&wg, func() { turn(i) })
	}
	if len(seats) > 0 {
		turn(0)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Round{}, nil, err
	}
	mu.Lock()
	closed := RoundAllAnswered
	if closedByQuorum {
		closed = RoundQuorum
	}
	mu.Unlock()
	rd := Round{Number: n, Closed: closed, Duration: r.e.cfg.Now().Sub(start)}
	for _, o := range outs {
		if closed == RoundQuorum && !o.answered && o.closedBy == ClosedByCancelled {
			o.closedBy = ClosedByQuorum
		}
		rd.Seats = append(rd.Seats, SeatTurn{Seat: o.role, Engine: o.engine, Answered: o.answered, ClosedBy: o.closedBy, Hedged: o.hedged, Finish: o.finish})
	}
	return rd, outs, nil
}

// seat runs one seat's turn: the primary, its backup on failure, and the
// backup as a hedge beside a slow primary. It returns when every call it
// started has ended.
func (r *run) seat(ctx context.Context, n int, s *seatState, msgs []core.Message, hedge time.Duration) *seatOutcome {
	out := &seatOutcome{role: s.role}
	sreq := &core.SeatRequest{Messages: msgs, MaxTokens: r.e.cfg.SeatMaxTokens}
	var primary, backup *Call
	if !s.primaryDown {
		primary = &Call{Role: s.role, Seat: s.role, Round: n, Engine: s.seat.Engine}
	}
	if s.seat.Backup != "" {
		backup = &Call{Role: s.role, Seat: s.role, Round: n, Engine: s.seat.Backup, Original: s.seat.Engine, Fallback: true}
	}
	if primary == nil && backup == nil {
		out.closedBy, out.reason = ClosedByUnavailable, "no engine left to run"
		s.gone = true
		return out
	}
	rr := r.race(ctx, primary, backup, sreq, hedge)
	seatEnded(out, s, &rr, primary == nil, backup == nil, ctx.Err() != nil)
	return out
}

// seatEnded records in out how the seat's turn ended, from what its race
// found (rr): answered, cancelled (cancelled), or unavailable, its primary
// absent from the race (noPrimary) or failed and its backup absent
// (noBackup) or failed too. It is apart from seat, whose frame stays on
// the stack while the seat's call waits.
func seatEnded(out *seatOutcome, s *seatState, rr *raced, noPrimary, noBackup, cancelled bool) {
	out.engine, out.hedged = rr.engine, rr.hedged
	if rr.primaryWhy != "" {
		s.primaryDown = true
	}
	switch {
	case rr.win != nil:
		out.answered, out.closedBy = true, ClosedByAnswered
		out.text, out.finish, out.outTokens = rr.win.Text, rr.win.Finish, rr.win.OutputTokens
		if rr.byBackup {
			reason := "hedged: the primary had not answered in time"
			switch {
			case rr.primaryWhy != "":
				reason = "the primary failed: " + string(rr.primaryWhy)
			case noPrimary:
				reason = "the primary failed in an earlier round"
			}
			out.sub = &Substitution{Seat: s.role, Original: s.seat.Engine, Used: s.seat.Backup, Reason: reason}
		}
	case cancelled:
		out.closedBy, out.reason = ClosedByCancelled, "cancelled"
	default:
		out.closedBy = ClosedByUnavailable
		switch {
		case noBackup:
			out.reason = fmt.Sprintf("%s failed (%s) and the seat has no backup", s.seat.Engine, rr.primaryWhy)
		case noPrimary:
			out.reason = fmt.Sprintf("backup %s failed (%s)", s.seat.Backup, rr.backupWhy)
		default:
			out.reason = fmt.Sprintf("%s failed (%s); backup %s failed (%s)", s.seat.Engine, rr.primaryWhy, s.seat.Backup, rr.backupWhy)
		}
		s.gone = true
	}
}

// raced is what race found.
type raced struct {
	win      *core.SeatAnswer
	engine   string // the engine that answered, or the one last waited on
	byBackup bool
	hedged   bool
	// primaryWhy and backupWhy are the failures' outcomes ("" when that
	// call did not fail, or was cancelled).
	primaryWhy, backupWhy Outcome
}

// race runs primary (nil: skip to the backup), starts backup (nil: none)
// when the primary fails, or beside it when the primary has not answered
// after hedge (0: never) or the primary engine's recent percentile latency,
// whichever is longer — if the engine's hedge budget allows —, and takes the
// first answer; the other call is cancelled. A seat's hedged backup is
// recorded with RoleHedge, a staff role's with Hedged set. It returns when
// every call it started has ended.
//
// The primary runs on the caller's goroutine and a hedge on the hedge
// timer's own: a deliberation holds thousands of calls open at a time, and
// a goroutine that only waited for another would double the stacks they
// hold.
func (r *run) race(ctx context.Context, primary, backup *Call, sreq *core.SeatRequest, hedge time.Duration) raced {
	var out raced
	if primary == nil {
		if backup != nil {
			r.runBackup(ctx, backup, sreq, &out)
		}
		return out
	}
	out.engine = primary.Engine
	// The primary's call waits on this goroutine below race, so race keeps
	// only what the wait needs in its own frame: the hedge's state lives
	// in h, and what follows the primary's end in finishRace.
	h := r.armHedge(ctx, primary, backup, sreq, hedge)
	pctx := ctx
	if h != nil {
		defer h.cancelPrimary()
		pctx = h.ctx
	}
	ans, why := r.call(pctx, primary, sreq)
	r.finishRace(ctx, h, primary, backup, sreq, ans, why, &out)
	return out
}

// hedge is a primary's hedge: a timer that starts the backup beside the
// primary unless the primary has ended first.
type hedge struct {
	ctx           context.Context // the primary's: a hedge's answer cancels it
	cancelPrimary context.CancelFunc
	timer         *time.Timer
	mu            sync.Mutex
	primaryDone   bool
	hedged        chan attempt       // set once the hedge started; gets its result
	cancelHedge   context.CancelFunc // set with hedged
}

// armHedge starts the hedge's timer for the primary, or returns nil when
// none can start (no hedge delay or no backup).
func (r *run) armHedge(ctx context.Context, primary, backup *Call, sreq *core.SeatRequest, delay time.Duration) *hedge {
	if delay <= 0 || backup == nil {
		return nil
	}
	h := &hedge{}
	h.ctx, h.cancelPrimary = context.WithCancel(ctx)
	lat := r.e.latencyOf(primary.Engine)
	lat.earn(r.pct)
	h.timer = time.AfterFunc(lat.hedgeDelay(delay, r.pct), func() {
		h.mu.Lock()
		if h.primaryDone || !lat.spend() {
			h.mu.Unlock()
			return
		}
		hctx, cancel := context.WithCancel(ctx)
		ch := make(chan attempt, 1)
		h.hedged, h.cancelHedge = ch, cancel
		h.mu.Unlock()
		c := *backup
		if c.Seat != "" {
			c.Role = RoleHedge
		} else {
			c.Hedged = true
		}
		ans, why := r.call(hctx, &c, sreq)
		if ans != nil {
			h.cancelPrimary() // the hedge answered first
		}
		ch <- attempt{ans: ans, why: why}
	})
	return h
}

// finishRace takes the primary's end (ans, why), waits for the hedge if
// one started (h may be nil), runs the backup after a failed primary that
// had no hedge, and records the race's result in out.
func (r *run) finishRace(ctx context.Context, h *hedge, primary, backup *Call, sreq *core.SeatRequest, ans *core.SeatAnswer, why Outcome, out *raced) {
	var ch chan attempt
	if h != nil {
		h.mu.Lock()
		h.primaryDone = true
		ch = h.hedged
		h.mu.Unlock()
		h.timer.Stop()
	}
	if ch != nil {
		out.hedged, out.engine = true, backup.Engine
		if ans != nil {
			h.cancelHedge()
		}
		a := <-ch
		h.cancelHedge()
		if ans == nil && a.ans != nil {
			out.win, out.byBackup = a.ans, true
			if why != OutcomeCancelled {
				out.primaryWhy = why
			}
			return
		}
		if a.why != OutcomeCancelled {
			out.backupWhy = a.why
		}
	}
	switch {
	case ans != nil:
		out.win, out.engine = ans, primary.Engine
	case why == OutcomeCancelled:
		out.engine = primary.Engine // still waiting on the primary when cancelled
	default:
		out.primaryWhy = why
		if ch == nil && backup != nil {
			r.runBackup(ctx, backup, sreq, out)
		}
	}
}

// attempt is one call's end.
type attempt struct {
	ans *core.SeatAnswer
	why Outcome
}

// runBackup runs the backup alone, in place of a failed or absent primary.
func (r *run) runBackup(ctx context.Context, backup *Call, sreq *core.SeatRequest, out *raced) {
	out.engine = backup.Engine
	ans, why := r.call(ctx, backup, sreq)
	switch {
	case ans != nil:
		out.win, out.byBackup = ans, true
	case why != OutcomeCancelled:
		out.backupWhy = why
	}
}
