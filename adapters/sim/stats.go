package sim

import (
	"crypto/sha256"
	"encoding/hex"
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
	// Callers counts authenticated model calls by who made them:
	// KeyCaller of the API key, or RoleCaller of the role whose assumed
	// credentials signed a Bedrock call. Keys are never kept, only their
	// fingerprints.
	Callers map[string]int
}

// KeyCaller names the holder of an API key in Stats.Callers: "key:" and the
// first 16 hex digits of the key's SHA-256.
func KeyCaller(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "key:" + hex.EncodeToString(sum[:8])
}

// RoleCaller names the holder of credentials assumed from a role in
// Stats.Callers: "role:" and the role ARN.
func RoleCaller(roleARN string) string { return "role:" + roleARN }

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
	callers    map[string]int
}

func (s *stats) caller(who string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.callers == nil {
		s.callers = map[string]int{}
	}
	s.callers[who]++
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
	out := Stats{Calls: make(map[string]map[Outcome]int, len(s.calls)), InFlight: s.inFlight, AssumeRole: s.assumeRole, Callers: maps.Clone(s.callers)}
	for m, byOutcome := range s.calls {
		out.Calls[m] = maps.Clone(byOutcome)
	}
	return out
}
