package genie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/modes"
)

// ask_genie: the assistant answers a mode's author about the mode's runs,
// what to test next and whether it is ready to certify. Everything it
// states is computed here from the stored batches and the mode's lifecycle
// (the facts); the staff engine only words the answer, and the guard keeps
// it from stating a figure the facts do not hold. A recommended run comes
// with a quote the author may approve (approve_quote).

// Defaults of an Asker.
const (
	// DefaultNarrowTo is the 95% half-width the assistant's "what to test
	// next" aims at: ±0.05 around W.
	DefaultNarrowTo = 0.05
	// DefaultHistoryTurns is how many turns of the conversation the
	// assistant reads back.
	DefaultHistoryTurns = 20
	// firstRunPerBucket is the first test run it recommends: 20 questions
	// a bucket, 60 in all, the least that can show a verdict.
	firstRunPerBucket = 20
	// runsRead is how many of the mode's newest runs the facts hold.
	runsRead = 5
	// maxMessage is the longest message the assistant reads, in bytes.
	maxMessage = 8 << 10
	// confidenceLevel is every interval's level (docs/tests.md).
	confidenceLevel = 0.95
)

// ModeResolver resolves the mode a caller names as a call would
// (calls.Service.ResolveMode).
type ModeResolver interface {
	ResolveMode(ctx context.Context, p *access.Principal, id, action string, tier core.Tier) (*core.Mode, error)
}

// ModeReader reads one of the caller's own modes (modes.Service.Get).
type ModeReader interface {
	Get(ctx context.Context, p *access.Principal, modeRef string) (*modes.Detail, error)
}

// RunReader reads the organisation's runs (runs.Service).
type RunReader interface {
	List(ctx context.Context, p *access.Principal) ([]*runs.Batch, error)
	Batch(ctx context.Context, p *access.Principal, kind runs.Kind, id string) (*runs.Batch, error)
}

// Quoter prices a recommended run and keeps it as a quote (Quotes.Make);
// its error says why it could not (UnavailableReason).
type Quoter interface {
	Make(ctx context.Context, p *access.Principal, kind runs.Kind, request json.RawMessage) (*Quote, error)
}

// AskDeps are what an Asker reads and calls.
type AskDeps struct {
	Modes    ModeResolver
	Authored ModeReader
	Runs     RunReader
	// Caller and Engines are the assistant's staff engines, asked in
	// order until one answers; Catalog prices nothing here, but names
	// them.
	Caller  deliberate.Caller
	Catalog *core.Catalog
	Engines []string
	// Quotes prices recommendations; nil offers none (quote_failed).
	Quotes Quoter
	// History keeps conversations; nil when the deployment keeps none
	// (genie.chat_history off): answers still work, quotes do not.
	History HistoryStore
	// NarrowTo and HistoryTurns default to DefaultNarrowTo and
	// DefaultHistoryTurns.
	NarrowTo     float64
	HistoryTurns int
	Logger       *slog.Logger
}

// Asker answers ask_genie. Safe for concurrent use.
type Asker struct{ d AskDeps }

// NewAsker returns an Asker, or an error naming what is missing.
func NewAsker(d AskDeps) (*Asker, error) {
	if d.Modes == nil || d.Runs == nil || d.Caller == nil || d.Catalog == nil {
		return nil, errors.New("genie: Modes, Runs, Caller and Catalog are required")
	}
	if d.NarrowTo <= 0 {
		d.NarrowTo = DefaultNarrowTo
	}
	if d.HistoryTurns <= 0 {
		d.HistoryTurns = DefaultHistoryTurns
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Asker{d: d}, nil
}

// Facts are everything an answer about a mode may state.
type Facts struct {
	Mode string `json:"mode,omitempty"`
	// ConfidenceLevel is the intervals' level, 0.95: a figure of the
	// method, which answers name ("its 95% interval").
	ConfidenceLevel float64 `json:"confidence_level"`
	// Runs are the mode's newest runs (or the one asked about), newest
	// first.
	Runs []*RunFacts `json:"runs"`
	// Next is the test run the assistant recommends; nil when none.
	Next *NextTest `json:"next_test,omitempty"`
	// Readiness is whether the mode can be certified now.
	Readiness *Readiness `json:"certification_readiness,omitempty"`
}

// NextTest is a recommended test run, computed from the runs.
type NextTest struct {
	// Buckets are the questions to ask per bucket; Reason says why in a
	// sentence whose figures are the facts'.
	Buckets map[string]int `json:"buckets"`
	Reason  string         `json:"reason"`
	// HalfWidthNow and HalfWidth are the bucket's 95% half-width today and
	// the one the run aims at (0 for a first run).
	HalfWidthNow float64 `json:"half_width_now,omitempty"`
	HalfWidth    float64 `json:"half_width,omitempty"`
}

// Readiness is certification readiness against its conditions: the mode
// is the organisation's own, released and listed, and has a test run whose
// lower bound reaches the provisional threshold with every gate passing.
type Readiness struct {
	Ready            bool     `json:"ready"`
	Owned            bool     `json:"owned"`
	LatestVersion    int      `json:"latest_version"`
	Listing          string   `json:"listing,omitempty"`
	CertifiedVersion int      `json:"certified_version"`
	PublishedVersion int      `json:"published_version"`
	Missing          []string `json:"missing,omitempty"`
}

// Answer is what ask_genie returns.
type Answer struct {
	Answer string `json:"answer"`
	Facts  *Facts `json:"facts"`
	// Quote prices the recommended run; QuoteUnavailable says why there
	// is none when a run was recommended.
	Quote            *Quote `json:"-"`
	QuoteUnavailable string `json:"quote_unavailable,omitempty"`
	// Regenerated: the first answer stated a figure the facts do not hold
	// and was asked for again; Removed counts the sentences dropped from
	// the second for the same fault.
	Regenerated bool `json:"regenerated"`
	Removed     int  `json:"sentences_removed"`
}

// AskRequest is ask_genie's arguments: Mode and Message, or BatchID alone.
type AskRequest struct {
	Mode    string
	Message string
	BatchID string
}

// Ask answers r for p.
func (a *Asker) Ask(ctx context.Context, p *access.Principal, r *AskRequest) (*Answer, error) {
	if r.Mode == "" && r.BatchID != "" {
		return a.status(ctx, p, r.BatchID)
	}
	if len(r.Message) > maxMessage {
		return nil, core.Errorf(core.CodeInvalidRequest, "message is at most %d bytes.", maxMessage).WithParam("message")
	}
	if _, suffix, _, _ := core.SplitModeSuffix(r.Mode); suffix != "" {
		return nil, core.Errorf(core.CodeSuffixNotSupported,
			"The assistant reads a mode as it stands: name %s without its @%s suffix.", strings.SplitN(r.Mode, "@", 2)[0], suffix).WithParam("mode")
	}
	mode, err := a.d.Modes.ResolveMode(ctx, p, r.Mode, core.ActionModelsRead, "")
	if err != nil {
		return nil, err
	}
	facts := &Facts{Mode: mode.ID, ConfidenceLevel: confidenceLevel}
	batches, err := a.modeRuns(ctx, p, mode)
	if err != nil {
		return nil, err
	}
	for _, b := range batches {
		facts.Runs = append(facts.Runs, FactsOf(b, a.d.NarrowTo))
	}
	facts.Next = a.nextTest(batches)
	facts.Readiness = a.readiness(ctx, p, mode, batches)

	var history []Turn
	payer := PayerOf(p)
	if a.d.History != nil {
		if history, err = a.d.History.Turns(ctx, p.Org.ID, payer, mode.ID, a.d.HistoryTurns); err != nil {
			a.d.Logger.Warn("reading the assistant's history", slog.String("error", err.Error()))
			history = nil
		}
	}
	ans, err := a.word(ctx, facts, history, r.Message)
	if err != nil {
		return nil, err
	}
	a.quote(ctx, p, mode, facts, r.Message, ans)
	if a.d.History != nil {
		if err := a.d.History.AppendTurns(ctx, p.Org.ID, payer, mode.ID,
			[]Turn{{Role: "user", Content: r.Message}, {Role: "assistant", Content: ans.Answer}}); err != nil {
			a.d.Logger.Warn("keeping the assistant's history", slog.String("error", err.Error()))
		}
	}
	return ans, nil
}

// modeRuns are the newest of the organisation's runs of mode, read in
// full. A person or key that may not read runs has none.
func (a *Asker) modeRuns(ctx context.Context, p *access.Principal, mode *core.Mode) ([]*runs.Batch, error) {
	list, err := a.d.Runs.List(ctx, p)
	if err != nil {
		if e := core.AsError(err); e.Code == core.CodeServiceUnavailable {
			return nil, core.Errorf(core.CodeStatusUnavailable, "The mode's runs could not be read. Retry shortly.").WithCause(err)
		}
		return nil, nil
	}
	var out []*runs.Batch
	for _, b := range list {
		if b.ModeID != mode.ID || len(out) == runsRead {
			continue
		}
		full, err := a.d.Runs.Batch(ctx, p, b.Kind, b.ID)
		if err != nil {
			continue // a run of a mode the key may not see reads as none
		}
		out = append(out, full)
	}
	return out, nil
}

// nextTest is the test run to launch next: a first run of 20 questions a
// bucket when the mode has no finished test run; otherwise, in its newest,
// the bucket whose 95% interval is widest, with the questions that would
// narrow it to NarrowTo (MoreQuestions), at most runs.MaxPerBucket. Nil
// when every bucket is that narrow already.
func (a *Asker) nextTest(batches []*runs.Batch) *NextTest {
	var rep *bench.Report
	for _, b := range batches {
		if b.Kind == runs.KindTest && b.Status == runs.StatusComplete {
			var r bench.Report
			if json.Unmarshal(b.Result, &r) == nil {
				rep = &r
				break
			}
		}
	}
	if rep == nil {
		n := firstRunPerBucket
		return &NextTest{Buckets: map[string]int{"light": n, "medium": n, "hard": n},
			Reason: fmt.Sprintf("The mode has no finished test run: %d questions a bucket is the least that can show a verdict.", n)}
	}
	var best *NextTest
	for _, bk := range rep.Buckets {
		h := halfWidth(bk.Lower, bk.Upper)
		more, ok := MoreQuestions(bk.N, bk.Lower, bk.Upper, a.d.NarrowTo)
		if !ok || more == 0 || best != nil && h <= best.HalfWidthNow {
			continue
		}
		ask := min(more, runs.MaxPerBucket)
		best = &NextTest{Buckets: map[string]int{string(bk.Bucket): ask}, HalfWidthNow: h, HalfWidth: a.d.NarrowTo,
			Reason: fmt.Sprintf("The %s bucket's interval is the widest, ±%.2f over %d questions; %d more would narrow it to ±%.2f.",
				bk.Bucket, h, bk.N, more, a.d.NarrowTo)}
	}
	return best
}

// readiness is whether mode can be certified now, and what is missing.
func (a *Asker) readiness(ctx context.Context, p *access.Principal, mode *core.Mode, batches []*runs.Batch) *Readiness {
	r := &Readiness{Owned: mode.OwnerOrg != "" && mode.OwnerOrg == p.Org.ID}
	if !r.Owned {
		r.Missing = append(r.Missing, "the mode is not your organisation's own: certification runs your own modes")
		return r
	}
	if a.d.Authored != nil {
		if d, err := a.d.Authored.Get(ctx, p, mode.ID); err == nil {
			st := d.Mode.ModeState
			r.LatestVersion, r.Listing, r.CertifiedVersion, r.PublishedVersion = st.LatestVersion, string(st.Listing),
				st.CertifiedVersion, st.PublishedVersion
			if st.LatestVersion == 0 {
				r.Missing = append(r.Missing, "release a version first")
			}
			if st.Listing != core.ListingApproved {
				r.Missing = append(r.Missing, "the mode must be listed in the marketplace: request a listing")
			}
		}
	}
	tested := false
	for _, b := range batches {
		if b.Kind != runs.KindTest || b.Status != runs.StatusComplete {
			continue
		}
		var rep bench.Report
		if json.Unmarshal(b.Result, &rep) != nil {
			continue
		}
		tested = true
		cfg := rep.Config.WithDefaults()
		if !rep.Lower.Defined() || float64(rep.Lower) < cfg.ProvisionalLower {
			r.Missing = append(r.Missing, "the latest test run's lower bound is under the provisional threshold")
		}
		for _, g := range rep.Gates {
			if !g.Passed {
				r.Missing = append(r.Missing, "a gate failed in the latest test run: "+g.Name)
			}
		}
		break
	}
	if !tested {
		r.Missing = append(r.Missing, "run a test first")
	}
	r.Ready = len(r.Missing) == 0
	return r
}

// quote attaches the recommended run's quote to ans: a certification when
// the message asks about one and the mode is ready, else the next test.
func (a *Asker) quote(ctx context.Context, p *access.Principal, mode *core.Mode, facts *Facts, message string, ans *Answer) {
	kind, req := runs.KindTest, json.RawMessage(nil)
	switch {
	case facts.Readiness != nil && facts.Readiness.Ready && strings.Contains(strings.ToLower(message), "certif"):
		kind = runs.KindCertify
		req, _ = json.Marshal(map[string]any{"model": mode.ID})
	case facts.Next != nil:
		req, _ = json.Marshal(map[string]any{"model": mode.ID, "buckets": facts.Next.Buckets})
	default:
		return
	}
	switch {
	case a.d.History == nil:
		ans.QuoteUnavailable = "chat_history_required"
		return
	case a.d.Quotes == nil:
		ans.QuoteUnavailable = "quote_failed"
		return
	}
	q, err := a.d.Quotes.Make(ctx, p, kind, req)
	if err != nil {
		ans.QuoteUnavailable = UnavailableReason(err)
		return
	}
	ans.Quote = q
}

// status answers ask_genie with a batch id alone: the run's status in
// words, and its facts.
func (a *Asker) status(ctx context.Context, p *access.Principal, id string) (*Answer, error) {
	if !runs.ValidUUID(id) {
		return nil, core.Errorf(core.CodeInvalidBatchID, "batch_id %q is not a run id: send the batch_id a launch answered.", id).WithParam("batch_id")
	}
	var b *runs.Batch
	var err error
	for _, kind := range []runs.Kind{runs.KindTest, runs.KindCertify} {
		if b, err = a.d.Runs.Batch(ctx, p, kind, id); err == nil {
			break
		}
		if e := core.AsError(err); e.Code == core.CodeServiceUnavailable {
			return nil, core.Errorf(core.CodeStatusUnavailable, "The run's status could not be read. Retry shortly.").WithCause(err)
		}
	}
	if err != nil {
		return nil, err // batch_not_found, as the poll answers it
	}
	f := FactsOf(b, a.d.NarrowTo)
	return &Answer{Answer: statusWords(f), Facts: &Facts{Mode: b.ModeID, ConfidenceLevel: confidenceLevel, Runs: []*RunFacts{f}}}, nil
}

// statusWords says where a run stands, with its facts' figures only.
func statusWords(f *RunFacts) string {
	what := "The test run"
	if f.Kind == string(runs.KindCertify) {
		what = "The certification"
	}
	done := f.Done
	switch runs.Status(f.Status) {
	case runs.StatusQueued:
		return fmt.Sprintf("%s is queued: %d questions wait for a worker.", what, f.Questions)
	case runs.StatusRunning:
		return fmt.Sprintf("%s is running: %d of %d questions are done.", what, done, f.Questions)
	case runs.StatusCancelled:
		return fmt.Sprintf("%s was cancelled after %d of %d questions.", what, done, f.Questions)
	case runs.StatusFailed:
		return fmt.Sprintf("%s failed; $%s of its charge was refunded.", what, core.Micros(f.RefundedUSD))
	}
	if r := f.Result; r != nil && r.W != nil && r.Lower != nil && r.Upper != nil {
		return fmt.Sprintf("%s is complete: W is %.2f, its 95%% interval %.2f to %.2f over %d questions, and its verdict is %s.",
			what, *r.W, *r.Lower, *r.Upper, r.N, strings.ReplaceAll(r.Verdict, "_", " "))
	}
	return fmt.Sprintf("%s is complete; its figures could not be scored.", what)
}

// askSystem is the assistant's instruction to the staff engine.
const askSystem = "You are Conclave's mode assistant. You help the author of a deliberation mode read its test runs " +
	"and certifications, decide what to test next and judge whether the mode is ready to certify. " +
	"Everything you know is in FACTS, a JSON document: state no figure that FACTS does not hold — no count, " +
	"rate, price or percentage of your own — and say plainly when FACTS does not answer the question. " +
	"Answer in a few short sentences, as a JSON object: {\"answer\": \"…\"}."

// word asks the staff engines for the answer to message over facts and
// history, and holds it to the guard: an answer that states a figure the
// facts do not hold is asked for again once, with the figures named, and
// the sentences of the second that still do are dropped.
func (a *Asker) word(ctx context.Context, facts *Facts, history []Turn, message string) (*Answer, error) {
	factsJSON, err := json.Marshal(facts)
	if err != nil {
		return nil, err
	}
	values := FactValues(facts)
	msgs := make([]core.Message, 0, len(history)+1)
	for _, t := range history {
		msgs = append(msgs, core.Message{Role: t.Role, Content: t.Content})
	}
	msgs = append(msgs, core.Message{Role: core.RoleUser, Content: message})
	system := askSystem + "\n\nFACTS:\n" + string(factsJSON)
	text, err := a.call(ctx, system, msgs)
	if err != nil {
		return nil, err
	}
	ans := &Answer{Answer: text, Facts: facts}
	bad := Check(text, values)
	if len(bad) == 0 {
		return ans, nil
	}
	ans.Regenerated = true
	figures := make([]string, 0, len(bad))
	for _, u := range bad {
		figures = append(figures, u.Numeral.Text)
	}
	revise := fmt.Sprintf("Revise this answer so that it states only figures FACTS holds; these are not in FACTS: %s.\n\n%s",
		strings.Join(figures, ", "), text)
	if again, err := a.call(ctx, system, []core.Message{{Role: core.RoleUser, Content: revise}}); err == nil {
		text = again
	}
	ans.Answer, ans.Removed = Strip(text, values)
	return ans, nil
}

// call asks the assistant's engines in order for one answer and reads it:
// the "answer" of the JSON object the instruction asks for, or the text as
// it came when an engine answered in prose. genie_unavailable when none
// answers.
func (a *Asker) call(ctx context.Context, system string, msgs []core.Message) (string, error) {
	return staffCall(ctx, a.d.Caller, a.d.Catalog, a.d.Engines, a.d.Logger, system, msgs, func(text string) (string, bool) {
		var out struct {
			Answer string `json:"answer"`
		}
		if json.Unmarshal([]byte(text), &out) == nil && out.Answer != "" {
			return out.Answer, true
		}
		return text, text != "" && !strings.HasPrefix(text, "{")
	})
}

// staffCall asks engines in order, on the service's own credentials (no
// organisation: never billed), until one answers text that read accepts;
// genie_unavailable when none does. read gets the answer trimmed and
// returns what the caller keeps.
func staffCall(ctx context.Context, caller deliberate.Caller, catalog *core.Catalog, engines []string, log *slog.Logger,
	system string, msgs []core.Message, read func(text string) (string, bool)) (string, error) {
	var last string
	for _, id := range engines {
		e, ok := catalog.Engine(id)
		if !ok {
			continue
		}
		ans, err := caller.Call(ctx, id, "", &core.SeatRequest{Model: e.Model, System: system, Messages: msgs, JSONOutput: true})
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			last = err.Error()
			continue
		}
		if ans.Error != nil {
			last = ans.Error.Message
			continue
		}
		if out, ok := read(strings.TrimSpace(ans.Text)); ok {
			return out, nil
		}
		last = "an answer without text"
	}
	log.Warn("the assistant's engines did not answer", slog.String("last", last))
	return "", core.Errorf(core.CodeGenieUnavailable, "The assistant could not answer: no staff engine answered. Nothing was billed; retry shortly.")
}

// UnavailableReason is ask_genie's quote_unavailable for an error of
// Quoter.Make: the code that refused the price (insufficient_balance,
// listing_required, mode_not_owned, …), or quote_failed.
func UnavailableReason(err error) string {
	var ce *core.Error
	if errors.As(err, &ce) && ce.Code != "" && ce.Code != core.CodeInternalError && ce.Code != core.CodeServiceUnavailable {
		return string(ce.Code)
	}
	return "quote_failed"
}

// Engines are the staff engines the assistant writes with: the synthesis
// engine of the catalogue's first configured mode, then its backup — the
// service's own engines for writing an answer, on the service's
// credentials, never billed to the caller.
func Engines(catalog *core.Catalog) []string {
	for _, m := range catalog.Modes() {
		if st, ok := m.Deliberation.Staff["synthesis"]; ok && st.Engine != "" {
			out := []string{st.Engine}
			if st.Backup != "" {
				out = append(out, st.Backup)
			}
			return out
		}
	}
	return nil
}
