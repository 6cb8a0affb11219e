package runs

// Status is where a batch stands. Its transitions (docs/tests.md, "Batch
// statuses"):
//
//	queued  → running    the first of its questions' jobs starts
//	running → complete   its last question is done and the batch is scored
//	running → failed     every question failed, or the scorer refused the batch
//	queued  → cancelled  its organisation cancelled it
//	running → cancelled  its organisation cancelled it, while a question was unanswered
//
// complete, failed and cancelled are final. A launch is charged once, up
// front; a question given up on or cancelled is refunded its price, and a
// batch that fails is refunded whatever of its charge is left. A cancel
// cancels only the questions nothing was answered to: those with an answer
// are judged after it, but a cancelled batch is never scored.
type Status string

// Statuses.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusComplete  Status = "complete"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Statuses lists every status, in the order a batch moves through them.
var Statuses = []Status{StatusQueued, StatusRunning, StatusComplete, StatusFailed, StatusCancelled}

// Final reports whether s is final: nothing moves a batch out of it.
func (s Status) Final() bool {
	return s == StatusComplete || s == StatusFailed || s == StatusCancelled
}

// CanMove reports whether a batch may move from s to next. Stores write a
// status only where the batch holds one it may move from (a conditional
// update), so that two workers racing cannot both move it.
func (s Status) CanMove(next Status) bool {
	switch s {
	case StatusQueued:
		return next == StatusRunning || next == StatusCancelled
	case StatusRunning:
		return next == StatusComplete || next == StatusFailed || next == StatusCancelled
	}
	return false
}

// MovesTo lists the statuses a batch may move to next from to: the from
// states of a conditional update to next.
func MovesTo(next Status) []Status {
	var out []Status
	for _, s := range Statuses {
		if s.CanMove(next) {
			out = append(out, s)
		}
	}
	return out
}
