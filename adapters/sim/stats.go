package sim

import (
	"maps"
	"sync"

	"github.com/conclavehq/conclave/core"
)

// Outcome is how one call ended, as Stats counts it.
type Outcome string

// Outcomes. A failure's outcome is its core.ErrorClass.
const (
	OutcomeOK             Outcome = "ok"       // answered (finish stop, length or content_filter)
	OutcomeCanceled       Outcome = "canceled" // the client gave up before the answer was due
	OutcomeRateLimited            = Outcome(core.ErrorRateLimited)
	OutcomeOverloaded             = Outcome(core.ErrorOverloaded)
	OutcomeTimeout                = Outcome(core.ErrorTimeout) // hung until the client gave up, or a timeout status
	OutcomeContextTooLong         = Outcome(core.ErrorContextTooLong)
	OutcomeAuthRefused            = Outcome(core.ErrorAuthRefused) // includes a missing or wrong key or signature
	OutcomeBadRequest             = Outcome(core.ErrorBadRequest)
	OutcomeMalformed              = Outcome(core.ErrorMalformed)
)

// Stats counts what a Server did since it started.
type Stats struct {
	// Calls counts model calls by model id and outcome.
	Calls map[string]map[Outcome]int
	// InFlight is how many model calls are being served right now.
	InFlight int
	// AssumeRole counts STS AssumeRole requests that issued credentials.
	AssumeRole int
}

// Count is how many calls to model ended with outcome.
func (s Stats) Count(model string, outcome Outcome) int { return s.Calls[model][outcome] }

// Total is how many model calls ended, whatever the outcome.
func (s Stats) Total() int {
	n := 0
	for _, byOutcome := range s.Calls {
		for _, c := range byOutcome {
			n += c
		}
	}
	return n
}

// stats is the Server's live, concurrency-safe tally.
type stats struct {
	mu         sync.Mutex
	calls      map[string]map[Outcome]int
	inFlight   int
	assumeRole int
}

func (s *stats) begin() {
	s.mu.Lock()
	s.inFlight++
	s.mu.Unlock()
}

func (s *stats) end(model string, o Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if s.calls == nil {
		s.calls = map[string]map[Outcome]int{}
	}
	if s.calls[model] == nil {
		s.calls[model] = map[Outcome]int{}
	}
	s.calls[model][o]++
}

func (s *stats) issued() {
	s.mu.Lock()
	s.assumeRole++
	s.mu.Unlock()
}

func (s *stats) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Stats{Calls: make(map[string]map[Outcome]int, len(s.calls)), InFlight: s.inFlight, AssumeRole: s.assumeRole}
	for m, byOutcome := range s.calls {
		out.Calls[m] = maps.Clone(byOutcome)
	}
	return out
}
