package deliberate

import (
	"context"
	"fmt"
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
	reason   string // why it did not answer
	sub      *Substitution
}

// round runs one pass of the seats and closes it per the quorum rule. It
// returns the round's entry (without judgment) and each seat's outcome, in
// seat order; every call it started has ended when it returns.
func (r *run) round(ctx context.Context, n int, seats []*seatState, prompt func(*seatState) []core.Message, quorum int, hedge time.Duration) (Round, []*seatOutcome, error) {
	start := r.e.cfg.Now()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type done struct {
		i int
		o *seatOutcome
	}
	ch := make(chan done, len(seats))
	for i, s := range seats {
		go func() { ch <- done{i, r.seat(rctx, n, s, prompt(s), hedge)} }()
	}
	outs := make([]*seatOutcome, len(seats))
	need := quorum
	if need <= 0 {
		need = len(seats)
	}
	var deadline <-chan time.Time
	if quorum > 0 {
		t := time.NewTimer(r.req.Mode.Deliberation.StragglerDeadline)
		defer t.Stop()
		deadline = t.C
	}
	pending, answered, passed := len(seats), 0, false
	closed := RoundAllAnswered
loop:
	for pending > 0 {
		if quorum > 0 && answered >= need && passed {
			closed = RoundQuorum
			break
		}
		select {
		case d := <-ch:
			outs[d.i] = d.o
			pending--
			if d.o.answered {
				answered++
			}
		case <-deadline:
			passed, deadline = true, nil
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	for ; pending > 0; pending-- {
		d := <-ch
		outs[d.i] = d.o
		if closed == RoundQuorum && !d.o.answered && d.o.closedBy == ClosedByCancelled {
			d.o.closedBy = ClosedByQuorum
		}
	}
	if err := ctx.Err(); err != nil {
		return Round{}, nil, err
	}
	rd := Round{Number: n, Closed: closed, Duration: r.e.cfg.Now().Sub(start)}
	for _, o := range outs {
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
	out.engine, out.hedged = rr.engine, rr.hedged
	if rr.primaryWhy != "" {
		s.primaryDown = true
	}
	switch {
	case rr.win != nil:
		out.answered, out.closedBy = true, ClosedByAnswered
		out.text, out.finish = rr.win.Text, rr.win.Finish
		if rr.byBackup {
			reason := "hedged: the primary had not answered in time"
			switch {
			case rr.primaryWhy != "":
				reason = "the primary failed: " + rr.primaryWhy
			case primary == nil:
				reason = "the primary failed in an earlier round"
			}
			out.sub = &Substitution{Seat: s.role, Original: s.seat.Engine, Used: s.seat.Backup, Reason: reason}
		}
	case ctx.Err() != nil:
		out.closedBy, out.reason = ClosedByCancelled, "cancelled"
	default:
		out.closedBy = ClosedByUnavailable
		switch {
		case backup == nil:
			out.reason = fmt.Sprintf("%s failed (%s) and the seat has no backup", s.seat.Engine, rr.primaryWhy)
		case primary == nil:
			out.reason = fmt.Sprintf("backup %s failed (%s)", s.seat.Backup, rr.backupWhy)
		default:
			out.reason = fmt.Sprintf("%s failed (%s); backup %s failed (%s)", s.seat.Engine, rr.primaryWhy, s.seat.Backup, rr.backupWhy)
		}
		s.gone = true
	}
	return out
}

// raced is what race found.
type raced struct {
	win      *core.SeatAnswer
	engine   string // the engine that answered, or the one last waited on
	byBackup bool
	hedged   bool
	// primaryWhy and backupWhy are the failures' outcomes ("" when that
	// call did not fail, or was cancelled).
	primaryWhy, backupWhy string
}

// race runs primary (nil: skip to the backup), starts backup (nil: none)
// when the primary fails, or beside it when the primary has not answered
// after hedge (0: never), and takes the first answer; the other call is
// cancelled. A seat's hedged backup is recorded with RoleHedge, a staff
// role's with Hedged set. It returns when every call it started has ended.
func (r *run) race(ctx context.Context, primary, backup *Call, sreq *core.SeatRequest, hedge time.Duration) raced {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type attempt struct {
		ans    *core.SeatAnswer
		why    string
		backup bool
	}
	results := make(chan attempt, 2)
	running := 0
	var out raced
	launch := func(c Call, isBackup bool) {
		running++
		out.engine = c.Engine
		go func() {
			ans, why := r.call(actx, c, sreq)
			results <- attempt{ans: ans, why: why, backup: isBackup}
		}()
	}
	backupStarted := false
	startBackup := func(hedged bool) {
		if backup == nil || backupStarted {
			return
		}
		backupStarted = true
		c := *backup
		if hedged {
			out.hedged = true
			if c.Seat != "" {
				c.Role = RoleHedge
			} else {
				c.Hedged = true
			}
		}
		launch(c, true)
	}
	var hedgeC <-chan time.Time
	if primary != nil {
		launch(*primary, false)
		if hedge > 0 && backup != nil {
			t := time.NewTimer(hedge)
			defer t.Stop()
			hedgeC = t.C
		}
	} else {
		startBackup(false)
	}
	for running > 0 && out.win == nil {
		select {
		case a := <-results:
			running--
			switch {
			case a.ans != nil:
				out.win, out.byBackup = a.ans, a.backup
				if a.backup {
					out.engine = backup.Engine
				} else {
					out.engine = primary.Engine
				}
			case a.why == OutcomeCancelled:
			case a.backup:
				out.backupWhy = a.why
			default:
				out.primaryWhy = a.why
				hedgeC = nil
				startBackup(false)
			}
		case <-hedgeC:
			hedgeC = nil
			startBackup(true)
		}
	}
	if out.win == nil && primary != nil && out.primaryWhy == "" {
		out.engine = primary.Engine // still waiting on the primary when cancelled
	}
	cancel()
	for ; running > 0; running-- {
		<-results
	}
	return out
}
