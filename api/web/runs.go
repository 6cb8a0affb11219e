package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/api/web/draw"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// The run pages: the organisation's test runs and certifications, the
// launch form (a dry run's quote first, then the launch on the
// Idempotency-Key the form was shown with), one batch's progress and
// result, and its cancel. Every handler goes through runs.Service, which
// asks the same policy as POST /v1/tests and /v1/certify.

// runsRoutes serves the test-run and certification pages and the
// certificates when the server has a runs service.
func (h *handler) runsRoutes(mux *http.ServeMux) error {
	if h.runs == nil {
		return nil
	}
	if err := h.parsePages("runs", "run-new", "run-quote", "run-cancel"); err != nil {
		return err
	}
	if err := h.parsePagesWith("run-result", "run"); err != nil {
		return err
	}
	mux.HandleFunc("GET /runs", h.signedIn(h.runsPage))
	mux.HandleFunc("GET /runs/new", h.signedIn(h.newRunPage))
	mux.HandleFunc("POST /runs/new", h.signedIn(h.submitRun))
	mux.HandleFunc("GET /runs/{kind}/{id}", h.signedIn(h.runPage))
	mux.HandleFunc("GET /runs/{kind}/{id}/progress", h.signedIn(h.runProgress))
	mux.HandleFunc("GET /runs/{kind}/{id}/cancel", h.signedIn(h.confirmCancelRun))
	mux.HandleFunc("POST /runs/{kind}/{id}/cancel", h.signedIn(h.cancelRun))
	return h.certificateRoutes(mux)
}

// kindWords names a batch's kind in a sentence.
func kindWords(k runs.Kind) string {
	if k == runs.KindCertify {
		return "certification"
	}
	return "test run"
}

// statusWords say where a batch stands.
var statusWords = map[runs.Status]string{
	runs.StatusQueued:    "Queued",
	runs.StatusRunning:   "Running",
	runs.StatusComplete:  "Complete",
	runs.StatusFailed:    "Failed",
	runs.StatusCancelled: "Cancelled",
}

// statusBadge is the badge class of a status.
func statusBadge(s runs.Status) string {
	switch s {
	case runs.StatusComplete:
		return "ok"
	case runs.StatusFailed:
		return "bad"
	case runs.StatusCancelled:
		return "muted"
	}
	return "warn"
}

// verdictWords say a verdict.
var verdictWords = map[string]string{
	string(bench.Certified):          "Certified",
	string(bench.Provisional):        "Provisional",
	string(bench.NotCertified):       "Not certified",
	string(bench.InsufficientSample): "Too few questions for a verdict",
}

func verdictBadge(v string) string {
	switch v {
	case string(bench.Certified):
		return "ok"
	case string(bench.Provisional), string(bench.InsufficientSample):
		return "warn"
	}
	return "bad"
}

// --- The list --------------------------------------------------------------

type runRow struct {
	ID, Kind, What, Model, Status, Badge, Verdict, VerdictBadge string
	Version, Done, Total                                        int
	Billed, Refunded                                            core.Micros
	Launched                                                    string
	Certificate                                                 bool
}

func (h *handler) runsPage(w http.ResponseWriter, r *http.Request) {
	if !h.inOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	list, err := h.runs.List(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	rows := make([]runRow, 0, len(list))
	for _, b := range list {
		row := runRow{ID: b.ID, Kind: string(b.Kind), What: kindWords(b.Kind), Model: b.Model, Version: b.ModeVersion,
			Status: statusWords[b.Status], Badge: statusBadge(b.Status), Done: b.Progress.Judged + b.Progress.Failed + b.Progress.Cancelled,
			Total: b.Progress.Total, Billed: b.Billed, Refunded: b.Refunded, Launched: when(b.CreatedAt), Certificate: b.Certified()}
		if c := b.Certification; c != nil && b.Status == runs.StatusComplete {
			row.Verdict, row.VerdictBadge = verdictWords[string(c.Verdict)], verdictBadge(string(c.Verdict))
		}
		rows = append(rows, row)
	}
	v := newView("Runs", p)
	v.Nav, v.Wide, v.Data = "runs", true, rows
	h.render(w, r, http.StatusOK, "runs", v)
}

// --- The launch form -----------------------------------------------------

// runFields are the launch form's fields, carried from the form to the
// quote and to the launch.
var runFields = []string{"kind", "model", "light", "medium", "hard", "repeats", "protocol", "key"}

type runFormData struct {
	Kind   string
	Modes  []modeChoice
	Tiers  []string
	Judges []string
	// Quote is a dry run's answer, on the quote page.
	Quote *quoteView
	// Hidden carries the form to the confirmation.
	Hidden []hiddenField
}

type modeChoice struct{ Value, Label string }

type hiddenField struct{ Name, Value string }

type quoteView struct {
	What            string
	Model, ModeKey  string
	Total, Minutes  int
	Cost            core.Micros
	Buckets         []quoteBucket
	RequiresListing bool
	Judges          string
	Repeats         int
	Tiers           string
}

type quoteBucket struct {
	Name               string
	Questions          int
	PerQuestion, Price string
}

// newKey is a launch's Idempotency-Key, made when its form is shown: a
// second submit of the same confirmation launches nothing more.
func newKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return "web-" + hex.EncodeToString(b[:])
}

func (h *handler) newRunPage(w http.ResponseWriter, r *http.Request) {
	if !h.inOrg(w, r) {
		return
	}
	kind := r.URL.Query().Get("kind")
	if kind != string(runs.KindCertify) {
		kind = string(runs.KindTest)
	}
	v := newView("New "+kindWords(runs.Kind(kind)), principalOf(r.Context()))
	v.Values = map[string]string{"kind": kind, "model": r.URL.Query().Get("model"), "light": "20", "medium": "20", "hard": "20",
		"repeats": "1", "protocol": string(runs.ProtocolPairwise), "key": newKey(),
		"tier." + string(core.DefaultTier): "on"}
	for _, j := range runs.Judges {
		v.Values["judge."+string(j)] = "on"
	}
	h.runFormView(w, r, http.StatusOK, v)
}

// runFormView renders the launch form with v's values and errors.
func (h *handler) runFormView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	d := &runFormData{Kind: v.Values["kind"]}
	for _, t := range core.Tiers {
		d.Tiers = append(d.Tiers, string(t))
	}
	for _, j := range runs.Judges {
		d.Judges = append(d.Judges, string(j))
	}
	seen := map[string]bool{}
	if h.modes != nil {
		if list, err := h.modes.List(r.Context(), v.principal); err == nil {
			for _, m := range list {
				if m.LatestVersion > 0 {
					d.Modes = append(d.Modes, modeChoice{Value: m.ID, Label: m.Name + " (" + m.Ticker + ")"})
					seen[m.ID] = true
				}
			}
		}
	}
	// A test run may also run any mode the person can call (a configured
	// mode, another organisation's published one); a certification only
	// the organisation's own.
	if h.calls != nil && d.Kind == string(runs.KindTest) {
		if list, err := h.calls.ListModes(r.Context(), v.principal); err == nil {
			for _, mv := range list {
				if m := mv.Mode; !seen[m.ID] {
					d.Modes = append(d.Modes, modeChoice{Value: m.ID, Label: m.Name + " (" + m.Ticker + ")"})
				}
			}
		}
	}
	v.Nav, v.Data = "runs", d
	h.render(w, r, status, "run-new", v)
}

// formValues reads the launch form as typed.
func formValues(r *http.Request) map[string]string {
	vals := map[string]string{}
	for _, f := range runFields {
		vals[f] = strings.TrimSpace(r.PostFormValue(f))
	}
	if vals["kind"] != string(runs.KindCertify) {
		vals["kind"] = string(runs.KindTest)
	}
	for _, t := range r.PostForm["tier"] {
		if core.Tier(t).Valid() {
			vals["tier."+t] = "on"
		}
	}
	for _, j := range r.PostForm["judge"] {
		if slices.Contains(runs.Judges, runs.Judge(j)) {
			vals["judge."+j] = "on"
		}
	}
	return vals
}

// rawNumber is a count as typed: a JSON number when it is a whole number,
// else the text, which the service refuses as it refuses it from the API.
func rawNumber(s string) json.RawMessage {
	if _, err := strconv.Atoi(s); err == nil {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("encoding a launch form: " + err.Error())
	}
	return b
}

// testRequest is the form as POST /v1/tests's body.
func testRequest(vals map[string]string, dryRun bool) *runs.TestRequest {
	req := &runs.TestRequest{Model: rawJSON(vals["model"]), DryRun: rawJSON(dryRun),
		JudgeRepeats: rawNumber(vals["repeats"]), JudgingProtocol: rawJSON(vals["protocol"])}
	counts := map[string]json.RawMessage{}
	for _, b := range runs.Buckets {
		if n := vals[string(b)]; n != "" && n != "0" {
			counts[string(b)] = rawNumber(n)
		}
	}
	if len(counts) > 0 {
		req.Buckets = rawJSON(counts)
	}
	tiers, judges := []string{}, []string{}
	for _, t := range core.Tiers {
		if vals["tier."+string(t)] == "on" {
			tiers = append(tiers, string(t))
		}
	}
	for _, j := range runs.Judges {
		if vals["judge."+string(j)] == "on" {
			judges = append(judges, string(j))
		}
	}
	req.Tiers, req.Judges = rawJSON(tiers), rawJSON(judges)
	return req
}

// launchForm sends the form to the service: a dry run, or the launch on
// the form's key.
func (h *handler) launchForm(r *http.Request, p *access.Principal, vals map[string]string, dryRun bool) (*runs.Acceptance, error) {
	key := runs.Key{}
	if !dryRun {
		key.Value = vals["key"]
	}
	if vals["kind"] == string(runs.KindCertify) {
		return h.runs.Certify(r.Context(), p, key, &runs.CertifyRequest{Model: rawJSON(vals["model"]), DryRun: rawJSON(dryRun)})
	}
	return h.runs.Test(r.Context(), p, key, testRequest(vals, dryRun))
}

// runFieldOfParam names the form field of each refusal's param.
var runFieldOfParam = map[string]string{"model": "model", "buckets": "buckets", "tiers": "tiers", "judges": "judges",
	"judge_repeats": "repeats", "judging_protocol": "protocol"}

// runFieldOf is the form field a refusal's param names, or "".
func runFieldOf(param string) string {
	if b, ok := strings.CutPrefix(param, "buckets."); ok {
		return b
	}
	return runFieldOfParam[param]
}

// submitRun answers the launch form: without confirm, a dry run and its
// quote, with a confirmation form; with confirm, the launch, and the
// batch's page. A refusal shows the form again, beside its field.
func (h *handler) submitRun(w http.ResponseWriter, r *http.Request) {
	if !h.inOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	if err := r.ParseForm(); err != nil {
		h.message(w, r, http.StatusBadRequest, "Refused", "The form could not be read. Go back and try again.")
		return
	}
	vals := formValues(r)
	if vals["key"] == "" {
		vals["key"] = newKey()
	}
	confirm := r.PostFormValue("confirm") == "launch"
	acc, err := h.launchForm(r, p, vals, !confirm)
	v := newView("New "+kindWords(runs.Kind(vals["kind"])), p)
	v.Values = vals
	if err != nil {
		var ce *core.Error
		if !errors.As(err, &ce) {
			h.failed(w, r, err)
			return
		}
		// A refusal of a field is shown beside it (422); any other, such as
		// the balance or the daily limit, above the form with its own
		// status.
		status := core.InfoFor(ce.Code).Status
		if f := runFieldOf(ce.Param); f != "" {
			v.Errors[f], status = ce.Message, http.StatusUnprocessableEntity
		} else {
			v.Error = ce.Message
		}
		retryAfter(w, ce)
		h.runFormView(w, r, status, v)
		return
	}
	if confirm {
		http.Redirect(w, r, runPath(acc.Batch)+"?done=launched", http.StatusSeeOther)
		return
	}
	d := &runFormData{Kind: vals["kind"], Quote: quoteOf(acc, vals)}
	for _, f := range runFields {
		d.Hidden = append(d.Hidden, hiddenField{f, vals[f]})
	}
	for _, t := range core.Tiers {
		if vals["tier."+string(t)] == "on" {
			d.Hidden = append(d.Hidden, hiddenField{"tier", string(t)})
		}
	}
	for _, j := range runs.Judges {
		if vals["judge."+string(j)] == "on" {
			d.Hidden = append(d.Hidden, hiddenField{"judge", string(j)})
		}
	}
	v.Title, v.Nav, v.Data = "Quote", "runs", d
	h.render(w, r, http.StatusOK, "run-quote", v)
}

// quoteOf is a dry run's quote as the page shows it.
func quoteOf(acc *runs.Acceptance, vals map[string]string) *quoteView {
	q := acc.Quote
	out := &quoteView{What: kindWords(acc.Kind), Model: acc.Model, ModeKey: acc.ModeKey, Total: q.Total, Minutes: q.Minutes, Cost: q.Cost,
		RequiresListing: acc.RequiresListing != nil && *acc.RequiresListing}
	for _, b := range runs.Buckets {
		bq, ok := q.Buckets[b]
		if !ok {
			continue
		}
		row := quoteBucket{Name: string(b), Questions: bq.Questions, PerQuestion: "—", Price: "in the flat price"}
		if acc.Kind == runs.KindTest {
			row.Price = usd(bq.Cost)
			if bq.PerQuestion > 0 {
				row.PerQuestion = usd(bq.PerQuestion)
			} else {
				var parts []string
				for _, t := range core.Tiers {
					if tq, ok := bq.Tiers[t]; ok {
						parts = append(parts, string(t)+" "+usd(tq.PerQuestion))
					}
				}
				row.PerQuestion = strings.Join(parts, " · ")
			}
		}
		out.Buckets = append(out.Buckets, row)
	}
	if acc.Kind == runs.KindCertify {
		out.Judges, out.Repeats, out.Tiers = "all three", runs.CertifyRepeats, "the mode's default tier"
		return out
	}
	var judges, tiers []string
	for _, j := range runs.Judges {
		if vals["judge."+string(j)] == "on" {
			judges = append(judges, string(j))
		}
	}
	for _, t := range core.Tiers {
		if vals["tier."+string(t)] == "on" {
			tiers = append(tiers, string(t))
		}
	}
	out.Judges, out.Tiers = strings.Join(judges, ", "), strings.Join(tiers, ", ")
	out.Repeats, _ = strconv.Atoi(vals["repeats"])
	return out
}

// runPath is a batch's page.
func runPath(b *runs.Batch) string {
	return "/runs/" + string(b.Kind) + "/" + url.PathEscape(b.ID)
}

// --- One batch ------------------------------------------------------------

// batchOf reads the batch the path names, or answers the page itself.
func (h *handler) batchOf(w http.ResponseWriter, r *http.Request) (*runs.Batch, bool) {
	if !h.inOrg(w, r) {
		return nil, false
	}
	kind := runs.Kind(r.PathValue("kind"))
	if kind != runs.KindTest && kind != runs.KindCertify {
		h.notFound(w, r)
		return nil, false
	}
	b, err := h.runs.Batch(r.Context(), principalOf(r.Context()), kind, r.PathValue("id"))
	if err != nil {
		if ce := core.AsError(err); ce.Code == core.CodeBatchNotFound || ce.Code == core.CodeMissingBatchID {
			h.notFound(w, r)
			return nil, false
		}
		h.failed(w, r, err)
		return nil, false
	}
	return b, true
}

type runData struct {
	B                       *runs.Batch
	What, Status, Badge     string
	Live, CanCancel         bool
	Done, Percent           int
	Buckets                 []bucketProgress
	Plan                    string
	Result                  *resultView
	Certificate             bool
	Path                    string
	Billed, Refunded, Kept  core.Micros
	CertNote, CertRefused   string
	CertRecorded, HasReport bool
}

type bucketProgress struct {
	Name                                       string
	Total, Answered, Judged, Failed, Cancelled int
}

// progressJSON is a batch's progress as the page and its poll show it.
type progressJSON struct {
	Status  runs.Status `json:"status"`
	Words   string      `json:"words"`
	Done    int         `json:"done"`
	Total   int         `json:"total"`
	Percent int         `json:"percent"`
	Final   bool        `json:"final"`
}

func progressOf(b *runs.Batch) progressJSON {
	done := b.Progress.Judged + b.Progress.Failed + b.Progress.Cancelled
	pct := 0
	if b.Progress.Total > 0 {
		pct = done * 100 / b.Progress.Total
	}
	return progressJSON{Status: b.Status, Done: done, Total: b.Progress.Total, Percent: pct, Final: b.Status.Final(),
		Words: fmt.Sprintf("%s: %d of %d questions done (%d judged, %d failed, %d cancelled).",
			statusWords[b.Status], done, b.Progress.Total, b.Progress.Judged, b.Progress.Failed, b.Progress.Cancelled)}
}

func (h *handler) runPage(w http.ResponseWriter, r *http.Request) {
	b, ok := h.batchOf(w, r)
	if !ok {
		return
	}
	pr := progressOf(b)
	d := &runData{B: b, What: kindWords(b.Kind), Status: statusWords[b.Status], Badge: statusBadge(b.Status), Live: !pr.Final,
		CanCancel: b.Status == runs.StatusQueued || b.Status == runs.StatusRunning, Done: pr.Done, Percent: pr.Percent,
		Certificate: b.Certified(), Path: runPath(b), Billed: b.Billed, Refunded: b.Refunded, Kept: b.Billed - b.Refunded}
	for _, bk := range runs.Buckets {
		if p, ok := b.Buckets[bk]; ok {
			d.Buckets = append(d.Buckets, bucketProgress{string(bk), p.Total, p.Answered, p.Judged, p.Failed, p.Cancelled})
		}
	}
	if pl := b.Plan; pl != nil {
		var counts []string
		for _, bk := range runs.Buckets {
			if n := pl.Counts[bk]; n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", n, bk))
			}
		}
		tiers := make([]string, len(pl.Tiers))
		for i, t := range pl.Tiers {
			tiers[i] = string(t)
		}
		judges := make([]string, len(pl.Judges))
		for i, j := range pl.Judges {
			judges[i] = string(j)
		}
		d.Plan = fmt.Sprintf("%s questions at %s; judged %s by %s, %d× each.", strings.Join(counts, ", "),
			strings.Join(tiers, ", "), pl.Protocol, strings.Join(judges, ", "), pl.Repeats)
	}
	if b.Status == runs.StatusComplete && len(b.Result) > 0 {
		d.Result = resultOf(b, false)
		d.HasReport = d.Result != nil
	}
	if c := b.Certification; c != nil {
		d.CertRecorded, d.CertRefused = c.ModeCertified, c.RecordRefusal
	}
	v := newView(strings.ToUpper(d.What[:1])+d.What[1:], principalOf(r.Context()))
	switch r.URL.Query().Get("done") {
	case "launched":
		v.Notice = "Launched and charged " + usd(b.Billed) + " up front. This page follows its progress."
	case "cancelled":
		v.Notice = "Cancelled. " + usd(b.Refunded) + " of the " + usd(b.Billed) + " charged is refunded; questions already answered are judged and stay charged."
	}
	v.Nav, v.Wide, v.Data = "runs", true, d
	h.render(w, r, http.StatusOK, "run", v)
}

// runProgress is the small JSON the page's script polls while the batch
// runs.
func (h *handler) runProgress(w http.ResponseWriter, r *http.Request) {
	b, ok := h.batchOf(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, progressOf(b))
}

func (h *handler) confirmCancelRun(w http.ResponseWriter, r *http.Request) {
	b, ok := h.batchOf(w, r)
	if !ok {
		return
	}
	v := newView("Cancel the "+kindWords(b.Kind), principalOf(r.Context()))
	v.Nav, v.Data = "runs", &runData{B: b, What: kindWords(b.Kind), Path: runPath(b), Billed: b.Billed, Refunded: b.Refunded,
		CanCancel: b.Status == runs.StatusQueued || b.Status == runs.StatusRunning}
	h.render(w, r, http.StatusOK, "run-cancel", v)
}

func (h *handler) cancelRun(w http.ResponseWriter, r *http.Request) {
	b, ok := h.batchOf(w, r)
	if !ok {
		return
	}
	if _, err := h.runs.Cancel(r.Context(), principalOf(r.Context()), b.Kind, b.ID); err != nil {
		if ce := core.AsError(err); ce.Code == core.CodeBatchFinished {
			v := newView("Cancel the "+kindWords(b.Kind), principalOf(r.Context()))
			v.Error = ce.Message
			v.Nav, v.Data = "runs", &runData{B: b, What: kindWords(b.Kind), Path: runPath(b), Billed: b.Billed, Refunded: b.Refunded}
			h.render(w, r, http.StatusConflict, "run-cancel", v)
			return
		}
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, runPath(b)+"?done=cancelled", http.StatusSeeOther)
}

// --- A result ---------------------------------------------------------------

type resultView struct {
	Verdict, VerdictBadge, Reason string
	W, Lower, Upper               string
	N, Questions                  int
	Chart                         template.HTML
	Rows                          []figureRow
	Judges                        []judgeRow
	Gates                         []gateRow
	Kappa, Position, Ties         string
	Config                        string
	Thresholds                    string
}

type figureRow struct {
	Label, W, Lower, Upper string
	N                      int
}

type judgeRow struct {
	Label, W, Lower, Upper, Without, Position string
	Valid                                     int
}

type gateRow struct {
	ID, Name string
	Passed   bool
	Checks   []string
}

// figureNames say the figures a gate compares.
var figureNames = map[string]string{
	"valid_share":     "share of judgments valid",
	"bucket_n":        "scorable questions",
	"w_without_judge": "W without the judge",
	"bucket_upper":    "upper bound",
	"length_drop":     "fall of W at equal length",
}

func figureName(f string) string {
	if n, ok := figureNames[f]; ok {
		return n
	}
	return strings.ReplaceAll(f, "_", " ")
}

// fig is a figure with two decimals, or a dash when undefined.
func fig(s bench.Stat) string {
	if !s.Defined() {
		return "—"
	}
	return strconv.FormatFloat(float64(s), 'f', 2, 64)
}

// resultOf reads a complete batch's report for its page; public hides the
// judges' names (Judge 1, 2, 3), as a public certificate names no model.
// Nil when the result cannot be read.
func resultOf(b *runs.Batch, public bool) *resultView {
	var rep bench.Report
	if err := json.Unmarshal(b.Result, &rep); err != nil || rep.Kind == "" && len(rep.Buckets) == 0 {
		return nil
	}
	verdict := string(rep.Verdict)
	if c := b.Certification; c != nil {
		verdict = string(c.Verdict)
	}
	cfg := rep.Config.WithDefaults()
	out := &resultView{Verdict: verdictWords[verdict], VerdictBadge: verdictBadge(verdict), Reason: rep.Reason,
		W: fig(rep.W), Lower: fig(rep.Lower), Upper: fig(rep.Upper), N: rep.N, Questions: rep.Questions,
		Kappa: fig(rep.FleissKappa), Position: fig(rep.PositionConsistency), Ties: fig(rep.TieRate), Config: cfg.Version,
		Thresholds: fmt.Sprintf("certified when the lower bound is at least %s and every gate passes; provisional from %s",
			fig(bench.Stat(cfg.CertifyLower)), fig(bench.Stat(cfg.ProvisionalLower)))}
	if public {
		out.Reason = ""
	}
	chart := &draw.Interval{ID: "w-" + b.ID, Title: "Win rate W against its baseline, with 95% intervals",
		Desc: fmt.Sprintf("W is %s, its 95%% interval %s to %s; the verdict reads the lower bound against %s (certified) and %s (provisional).",
			out.W, out.Lower, out.Upper, fig(bench.Stat(cfg.CertifyLower)), fig(bench.Stat(cfg.ProvisionalLower))),
		Marks: []draw.Threshold{{Label: "provisional ≥", At: cfg.ProvisionalLower}, {Label: "certified ≥", At: cfg.CertifyLower}}}
	add := func(label string, w, lo, up bench.Stat, n int) {
		chart.Rows = append(chart.Rows, draw.IntervalRow{Label: label, Value: float64(w), Lower: float64(lo), Upper: float64(up)})
		out.Rows = append(out.Rows, figureRow{Label: label, W: fig(w), Lower: fig(lo), Upper: fig(up), N: n})
	}
	add("All questions", rep.W, rep.Lower, rep.Upper, rep.N)
	for _, bk := range rep.Buckets {
		add(strings.ToUpper(string(bk.Bucket[:1]))+string(bk.Bucket[1:]), bk.W, bk.Lower, bk.Upper, bk.N)
	}
	names := map[string]string{}
	for i, j := range rep.Judges {
		label := j.Judge
		if public {
			label = "Judge " + strconv.Itoa(i+1)
		}
		names[j.Judge] = label
		add(label, j.W, j.Lower, j.Upper, j.Valid)
		out.Judges = append(out.Judges, judgeRow{Label: label, W: fig(j.W), Lower: fig(j.Lower), Upper: fig(j.Upper),
			Without: fig(j.WWithout), Position: fig(j.PositionConsistency), Valid: j.Valid})
	}
	out.Chart = chart.SVG()
	for _, g := range rep.Gates {
		row := gateRow{ID: g.ID, Name: g.Name, Passed: g.Passed}
		for _, c := range g.Checks {
			subject := c.Subject
			if n, ok := names[subject]; ok {
				subject = n
			}
			if subject != "" {
				subject = " (" + subject + ")"
			}
			mark := "passed"
			if !c.Passed {
				mark = "failed"
			}
			row.Checks = append(row.Checks, fmt.Sprintf("%s%s %s %s %s: %s", figureName(c.Figure), subject,
				fig(c.Value), strings.NewReplacer(">=", "≥", "<=", "≤").Replace(c.Op), fig(bench.Stat(c.Threshold)), mark))
		}
		out.Gates = append(out.Gates, row)
	}
	return out
}
