package web

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/conclavehq/conclave/api/web/markdown"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/classify"
	"github.com/conclavehq/conclave/core/expiring"
)

// The playground: a person asks a mode a question from the browser. It is
// a call through the same call service as /v1/chat/completions, made by the
// session's principal (PEOPLE.md): billed to the organisation exactly as a
// key of that person would be, under the person's rate and the
// organisation's slots. Once admitted the deliberation runs to its end
// whatever the page does — closed, reloaded, navigated away — and its
// answer is kept on its receipt. While it runs, this replica keeps its
// steps in memory for the page to poll; when it is done the page draws the
// receipt: the answer, the bill and the timeline, beside what the mode's
// latest test run found for questions of the same depth.

// Playground limits.
const (
	// playKept is how long a playground call's steps and answer stay in
	// this replica's memory after it started; past it the page reads the
	// receipt alone.
	playKept = 2 * time.Hour
	// playsHeld is the most playground calls a replica remembers (a
	// question and an answer each, some tens of kilobytes at most). Past
	// it the lapsed are dropped, and if none had lapsed all are forgotten
	// (core/expiring): their pages then read the receipts.
	playsHeld = 1024
	// playStartWait is how long the form waits for a call to be refused
	// before sending the person to its page: admission refusals (balance,
	// rate, slots, input too long) come well within it.
	playStartWait = 2 * time.Second
	// playSteps is the most steps of one call kept for its page.
	playSteps = 64
)

// playRun is one playground call as this replica saw it.
type playRun struct {
	id, personID, orgID   string
	model, tier, question string
	started               time.Time

	mu      sync.Mutex
	steps   []string
	depth   core.Depth
	done    bool
	answer  string
	replay  string // the request that ran the call, when this one replayed it
	refusal *core.Error
	failure string
	changed chan struct{} // closed and replaced at each step and at the end
}

func (pr *playRun) observe(p calls.Progress) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if p.Depth != "" {
		pr.depth = p.Depth
	}
	if len(pr.steps) < playSteps {
		pr.steps = append(pr.steps, p.Describe())
	}
	close(pr.changed)
	pr.changed = make(chan struct{})
}

func (pr *playRun) finish(res *calls.ChatResult, err error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.done = true
	var ce *core.Error
	switch {
	case err == nil && res.Replay != nil:
		pr.answer, pr.replay = res.Replay.Completion.Answer, res.Replay.RequestID
	case err == nil:
		pr.answer = res.Completion.Answer
	case errors.As(err, &ce):
		pr.refusal = ce
	default:
		pr.failure = "The call could not be completed; nothing was billed for what did not run. Ask again."
	}
	close(pr.changed)
	pr.changed = make(chan struct{})
}

// state is a copy of what the page shows, taken under the lock.
type playState struct {
	ID, Model, Tier, Question string
	Started                   time.Time
	Steps                     []string
	Depth                     core.Depth
	Done                      bool
	Answer                    template.HTML
	Replay                    string
	Refusal                   string
	Failure                   string
}

func (pr *playRun) state() *playState {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	s := &playState{ID: pr.id, Model: pr.model, Tier: pr.tier, Question: pr.question, Started: pr.started,
		Steps: append([]string(nil), pr.steps...), Depth: pr.depth, Done: pr.done, Replay: pr.replay, Failure: pr.failure}
	if pr.answer != "" {
		s.Answer = markdown.Render(pr.answer)
	}
	if pr.refusal != nil {
		s.Refusal = pr.refusal.Message
	}
	return s
}

// playgroundRoutes serves the playground when the server has a call
// service.
func (h *handler) playgroundRoutes(mux *http.ServeMux) error {
	if h.calls == nil || h.dash == nil {
		return nil // the call's page draws its receipt through the dashboard
	}
	if err := h.parsePages("playground", "playground-call"); err != nil {
		return err
	}
	h.plays = expiring.New[string, *playRun](playsHeld)
	mux.HandleFunc("GET /playground", h.signedIn(h.playgroundPage))
	mux.HandleFunc("POST /playground", h.signedIn(h.ask))
	mux.HandleFunc("GET /playground/{id}", h.signedIn(h.playPage))
	mux.HandleFunc("GET /playground/{id}/status", h.signedIn(h.playStatus))
	return nil
}

// playForm is the playground form's figures.
type playForm struct {
	Modes []*calls.ModeView
	Tiers []core.Tier
	// Key is the form's idempotency key: a second submission of the same
	// form (a double click, a reload of the POST) replays the first call
	// instead of running and billing it again.
	Key string
}

func (h *handler) playgroundView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := v.principal
	modes, err := h.calls.ListModes(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	if v.Values["key"] == "" {
		v.Values["key"] = "play-" + rand.Text()
	}
	if v.Values["tier"] == "" {
		v.Values["tier"] = string(core.DefaultTier)
	}
	v.Nav, v.Data = "playground", &playForm{Modes: modes, Tiers: core.Tiers, Key: v.Values["key"]}
	h.render(w, r, status, "playground", v)
}

func (h *handler) playgroundPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	v := newView("Playground", principalOf(r.Context()))
	if m := r.URL.Query().Get("mode"); m != "" && len(m) <= 200 {
		v.Values["mode"] = m
	}
	h.playgroundView(w, r, http.StatusOK, v)
}

// playFields maps the parameter a call's refusal names to the form's field.
var playFields = map[string]string{"model": "mode", "messages": "question", "tier": "tier", "Idempotency-Key": "question"}

// ask starts a playground call: the same parsing and call as
// /v1/chat/completions, for the session's principal. A refusal at
// admission is shown on the form; an admitted call goes on in the
// background and the person is sent to its page.
func (h *handler) ask(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	v := newView("Playground", p)
	for _, f := range []string{"mode", "tier", "question", "key"} {
		v.Values[f] = r.PostFormValue(f)
	}
	if v.Values["mode"] == "" {
		v.Errors["mode"] = "Choose the mode to ask."
	}
	if v.Values["question"] == "" {
		v.Errors["question"] = "Write the question to ask."
	}
	if len(v.Errors) > 0 {
		h.playgroundView(w, r, http.StatusUnprocessableEntity, v)
		return
	}
	model, _ := json.Marshal(v.Values["mode"])
	tier, _ := json.Marshal(v.Values["tier"])
	messages, _ := json.Marshal([]core.Message{{Role: "user", Content: v.Values["question"]}})
	params, err := calls.ParseChat(&calls.ChatInput{Model: model, Messages: messages, Tier: tier})
	if err == nil && v.Values["key"] != "" {
		err = calls.CheckIdempotencyKey(v.Values["key"])
		params.IdempotencyKey = v.Values["key"]
	}
	if err != nil {
		h.askRefused(w, r, v, err)
		return
	}
	run := &playRun{id: core.NewID("req"), personID: p.Person.ID, orgID: p.Org.ID, model: params.Model, tier: string(params.Tier),
		question: v.Values["question"], started: time.Now(), changed: make(chan struct{})}
	first := run.changed
	// The call outlives this request: it is billed and kept whatever the
	// page does next (the call service runs an admitted deliberation to its
	// end and is drained on shutdown).
	ctx := context.WithoutCancel(r.Context())
	go func() {
		res, err := h.calls.Chat(ctx, p, calls.Call{RequestID: run.id, Endpoint: "page:/playground", Progress: run.observe}, params)
		if err != nil {
			var ce *core.Error
			if !errors.As(err, &ce) {
				h.log.Error("a playground call failed", slog.String("request_id", run.id), slog.String("error", err.Error()))
			}
		}
		run.finish(res, err)
	}()
	select {
	case <-first:
	case <-time.After(playStartWait):
	}
	st := run.state()
	if st.Done && st.Refusal != "" && len(st.Steps) == 0 {
		h.askRefused(w, r, v, run.refusal)
		return
	}
	now := time.Now()
	h.plays.Put(run.id, run, now.Add(playKept), now)
	http.Redirect(w, r, "/playground/"+run.id, http.StatusSeeOther)
}

// askRefused shows a refusal on the form: beside the field it names, or
// above the form, with Retry-After when it carries a wait.
func (h *handler) askRefused(w http.ResponseWriter, r *http.Request, v *view, err error) {
	var ce *core.Error
	if !errors.As(err, &ce) {
		h.failed(w, r, err)
		return
	}
	if f, ok := playFields[ce.Param]; ok {
		v.Errors[f] = ce.Message
	} else {
		v.Error = ce.Message
	}
	retryAfter(w, ce)
	v.Values["key"] = "" // a new form, a new call
	h.playgroundView(w, r, core.InfoFor(ce.Code).Status, v)
}

// playData is a playground call's page: its state in this replica's
// memory (nil once forgotten), and its receipt once written.
type playData struct {
	Run     *playState
	Receipt *receiptData
	// Bucket is the test-run bucket nearest the call's depth, and Tested
	// what the mode's latest finished test run found in it (nil when it
	// has none).
	Bucket string
	Tested *bucketResult
	// Model is the mode the call asked, as named.
	Model string
}

// bucketResult is one bucket's figures from a test run: W, its 95%
// interval and the questions it counts (the run's page draws them).
type bucketResult struct {
	BatchID         string
	Finished        time.Time
	W, Lower, Upper string
	N               int
}

// playRunOf is the playground call id of p's, or nil when this replica
// does not remember it (or it is another person's).
func (h *handler) playRunOf(p *access.Principal, id string) *playRun {
	run, ok := h.plays.Get(id, time.Now())
	if !ok || run.personID != p.Person.ID || run.orgID != p.Org.ID {
		return nil
	}
	return run
}

func (h *handler) playPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	id := r.PathValue("id")
	d := &playData{}
	if run := h.playRunOf(p, id); run != nil {
		d.Run = run.state()
	}
	receiptID := id
	if d.Run != nil && d.Run.Replay != "" {
		receiptID = d.Run.Replay
	}
	if d.Run == nil || d.Run.Done {
		a, err := h.dash.Receipt(r.Context(), p, receiptID)
		var ce *core.Error
		switch {
		case err == nil:
			d.Receipt = h.receiptView(r, p, a)
		case errors.As(err, &ce) && ce.Code == core.CodeReceiptNotFound:
			if d.Run == nil {
				h.message(w, r, http.StatusNotFound, "No such call",
					"This server knows no playground call of yours at this address. A call that ran on another server of this deployment shows on its receipt once it is done: see Receipts.")
				return
			}
		default:
			h.failed(w, r, err)
			return
		}
	}
	h.nearestBucket(r, p, d)
	v := newView("Playground call", p)
	v.Nav, v.Wide, v.Data = "playground", true, d
	h.render(w, r, http.StatusOK, "playground-call", v)
}

// playStatus answers the page's script: whether the call is done, and its
// steps so far. It waits up to 10 s for a change, so a page polls about
// once per step rather than once per second.
func (h *handler) playStatus(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	run := h.playRunOf(p, r.PathValue("id"))
	w.Header().Set("Content-Type", "application/json")
	if run == nil {
		// Forgotten here: the page reloads and reads the receipt.
		_ = json.NewEncoder(w).Encode(map[string]any{"done": true})
		return
	}
	run.mu.Lock()
	changed, n := run.changed, len(run.steps)
	run.mu.Unlock()
	if after := r.URL.Query().Get("after"); after != "" && after == strconv.Itoa(n) && !run.state().Done {
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
			return
		}
	}
	st := run.state()
	_ = json.NewEncoder(w).Encode(map[string]any{"done": st.Done, "steps": st.Steps})
}

// nearestBucket sets d's bucket — the test-run bucket of the call's depth,
// as it was classified (from the receipt's difficulty score once this
// replica has forgotten the call) — and what the mode's latest finished
// test run found in it.
func (h *handler) nearestBucket(r *http.Request, p *access.Principal, d *playData) {
	depth, model := core.Depth(""), ""
	if d.Run != nil {
		depth, model = d.Run.Depth, d.Run.Model
	}
	if rc := receiptOf(d); rc != nil {
		if depth == "" && rc.DifficultyScore != nil {
			depth = classify.DepthFor(*rc.DifficultyScore)
		}
		if model == "" {
			model = rc.Mode
		}
	}
	d.Model = model
	for _, b := range runs.Buckets {
		if b.Depth() == depth {
			d.Bucket = string(b)
		}
	}
	if d.Bucket == "" || model == "" || h.runs == nil {
		return
	}
	// The newest complete test run of the mode: the list is newest first,
	// and carries no result, which the batch itself does.
	list, err := h.runs.List(r.Context(), p)
	if err != nil {
		return // a person who may not read runs sees none
	}
	for _, b := range list {
		if b.Kind != runs.KindTest || b.Status != runs.StatusComplete || (b.ModeID != model && b.Model != model) {
			continue
		}
		full, err := h.runs.Batch(r.Context(), p, runs.KindTest, b.ID)
		if err != nil {
			return
		}
		d.Tested = testedIn(full, runs.Bucket(d.Bucket))
		return
	}
}

// receiptOf is the receipt of a playground call's page, or nil.
func receiptOf(d *playData) *core.Receipt {
	if d.Receipt == nil {
		return nil
	}
	return d.Receipt.Receipt
}

// testedIn is what test run b found in bucket: W and its interval; nil
// when its report has no figures for the bucket.
func testedIn(b *runs.Batch, bucket runs.Bucket) *bucketResult {
	var rep bench.Report
	if json.Unmarshal(b.Result, &rep) != nil {
		return nil
	}
	for _, bk := range rep.Buckets {
		if runs.Bucket(bk.Bucket) != bucket {
			continue
		}
		out := &bucketResult{BatchID: b.ID, W: fig(bk.W), Lower: fig(bk.Lower), Upper: fig(bk.Upper), N: bk.N}
		if b.FinishedAt != nil {
			out.Finished = *b.FinishedAt
		}
		return out
	}
	return nil
}
