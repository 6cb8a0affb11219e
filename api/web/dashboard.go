package web

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conclavehq/conclave/api/web/draw"
	"github.com/conclavehq/conclave/api/web/markdown"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/dashboard"
)

// The dashboard's pages: overview, receipts (a list and one receipt with
// its deliberation drawn), money (the journal and its export), provider
// keys (BYOK), the audit trail and a key's limits. Each handler reads
// through dashboard.Service, which asks the policy with the person's role.

// dashboardRoutes adds the dashboard's pages to mux.
func (h *handler) dashboardRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /receipts", h.signedIn(h.receiptsPage))
	mux.HandleFunc("GET /receipts/{id}", h.signedIn(h.receiptPage))
	mux.HandleFunc("GET /money", h.signedIn(h.moneyPage))
	mux.HandleFunc("GET /money/export.csv", h.signedIn(h.exportJournal))
	mux.HandleFunc("GET /money/export.json", h.signedIn(h.exportJournal))
	mux.HandleFunc("GET /byok", h.signedIn(h.byokPage))
	mux.HandleFunc("POST /byok/{provider}", h.signedIn(h.setBYOK))
	mux.HandleFunc("POST /byok/{provider}/test", h.signedIn(h.testBYOK))
	mux.HandleFunc("GET /byok/{provider}/remove", h.signedIn(h.confirmRemoveBYOK))
	mux.HandleFunc("POST /byok/{provider}/remove", h.signedIn(h.removeBYOK))
	mux.HandleFunc("GET /audit", h.signedIn(h.auditPage))
	mux.HandleFunc("GET /keys/{id}/limits", h.signedIn(h.keyLimitsPage))
	mux.HandleFunc("POST /keys/{id}/limits", h.signedIn(h.setKeyLimits))
}

// dashboardPages are the templates of the dashboard's pages.
var dashboardPages = []string{"overview", "receipts", "receipt", "money", "byok", "byok-remove", "audit", "limits", "person-remove"}

// dashboardFuncs are the templates' formatting helpers.
var dashboardFuncs = template.FuncMap{
	"usd":      usd,
	"signed":   signedUSD,
	"when":     when,
	"day":      func(t time.Time) string { return t.UTC().Format("2 Jan 2006") },
	"ago":      ago,
	"ms":       func(ms *int64) string { return spellMS(ms) },
	"posting":  postingLabel,
	"memo":     memoLink,
	"num":      num,
	"list":     func(s ...string) []string { return s },
	"dur":      spellDuration,
	"int64":    func(n int) int64 { return int64(n) },
	"score":    func(f *float64) string { return strconv.FormatFloat(*f, 'f', 2, 64) },
	"credit":   func(m *core.Micros) core.Micros { return *m },
	"outcome":  func(o string) string { return outcomeWords[o] },
	"provider": func(p string) string { return providerNames[p] },
	"deref": func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	},
}

// usd is an amount of money as a person reads it: "$0.0042", "$12.50",
// exact to the micro-dollar.
func usd(m core.Micros) string {
	s := m.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if i := strings.IndexByte(s, '.'); i < 0 {
		s += ".00"
	} else if len(s)-i == 2 {
		s += "0"
	}
	if neg {
		return "−$" + s
	}
	return "$" + s
}

// signedUSD is an amount with its sign always shown: a credit "+$10.00".
func signedUSD(m core.Micros) string {
	if m > 0 {
		return "+" + usd(m)
	}
	return usd(m)
}

func when(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04:05 UTC") }

// ago says how long before now t was, roughly: "3 min ago".
func ago(t *time.Time) string {
	if t == nil {
		return "never"
	}
	d := time.Since(*t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return t.UTC().Format("2 Jan 2006")
}

func spellMS(ms *int64) string {
	if ms == nil {
		return "—"
	}
	if *ms < 1000 {
		return fmt.Sprintf("%d ms", *ms)
	}
	return strconv.FormatFloat(float64(*ms)/1000, 'f', 1, 64) + " s"
}

// num is thousands for any of the integer types a page shows.
func num(n any) string {
	switch v := n.(type) {
	case int:
		return core.Thousands(int64(v))
	case int64:
		return core.Thousands(v)
	}
	return fmt.Sprint(n)
}

// postingLabels name the journal's kinds of posting.
var postingLabels = map[string]string{
	core.PostingTrialGrant:    "Trial credit",
	core.PostingTopUp:         "Funds added",
	core.PostingCallCharge:    "Call",
	core.PostingTestCharge:    "Test run",
	core.PostingCertifyCharge: "Certification",
	core.PostingTestRefund:    "Test run refund",
	core.PostingCertifyRefund: "Certification refund",
	core.PostingTrialExpiry:   "Trial credit expired",
}

func postingLabel(kind string) string {
	if l, ok := postingLabels[kind]; ok {
		return l
	}
	return kind
}

// memoLink is a posting's memo, with a call's linked to its receipt.
func memoLink(kind, memo string) template.HTML {
	if id, ok := strings.CutPrefix(memo, "call "); ok && kind == core.PostingCallCharge {
		return template.HTML(`<a href="/receipts/` + url.PathEscape(id) + `">` + template.HTMLEscapeString(id) + `</a>`)
	}
	return template.HTML(template.HTMLEscapeString(memo))
}

// inOrg answers a page that needs an organisation for a person in none.
func (h *handler) inOrg(w http.ResponseWriter, r *http.Request) bool {
	if p := principalOf(r.Context()); p.Org == nil {
		h.message(w, r, http.StatusForbidden, "No organisation", "You are not in an organisation yet: open an invitation link to join one.")
		return false
	}
	return true
}

// needOrg answers a dashboard page that needs an organisation for a person
// in none, and any when the server serves no dashboard.
func (h *handler) needOrg(w http.ResponseWriter, r *http.Request) bool {
	if !h.inOrg(w, r) {
		return false
	}
	if h.dash == nil {
		h.notFound(w, r)
		return false
	}
	return true
}

// --- Overview ------------------------------------------------------------------

type overviewData struct {
	*dashboard.Overview
	AvailableMoney core.Micros
	ByMode, ByKey  template.HTML
	ModeRows       []spendRow
	KeyRows        []spendRow
	Allowance      core.Micros
	// Alerts are this month's crossed alert thresholds (alerts.go).
	Alerts []string
}

// spendRow is one line of the overview's tables: a mode's or key's spend
// over the days shown.
type spendRow struct {
	Label   string
	Charges int64
	Billed  core.Micros
}

// maxTableRows is how many modes or keys the overview's tables list; the
// rest are one line.
const maxTableRows = 10

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if p.Org == nil || h.dash == nil {
		h.render(w, r, http.StatusOK, "home", newView("Home", p))
		return
	}
	o, err := h.dash.Overview(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	d := &overviewData{Overview: o, Allowance: h.dash.ActivationAllowance(), Alerts: h.crossedAlerts(r, p)}
	if o.Money != nil {
		d.AvailableMoney = o.Money.Available()
	}
	names := map[string]string{}
	var ids []string
	for i, t := range o.ByKey.Totals {
		if i < maxTableRows {
			ids = append(ids, t.Label)
		}
	}
	if keys, err := h.people.KeyNames(r.Context(), p, ids); err == nil {
		for _, k := range keys {
			names[k.ID] = k.Name + " (" + k.Hint + ")"
		}
	}
	keyLabel := func(l string) string {
		switch l {
		case core.SpendTest:
			return "Test runs"
		case core.SpendCertify:
			return "Certifications"
		case "":
			return "Signed in (no key)"
		}
		if n, ok := names[l]; ok {
			return n
		}
		return l
	}
	modeLabel := func(l string) string {
		if l == "" {
			return "(unknown)"
		}
		return l
	}
	d.ByMode, d.ModeRows = spendChart("by-mode", "Spend by mode, last 30 days", o, o.ByMode, modeLabel)
	d.ByKey, d.KeyRows = spendChart("by-key", "Spend by key, last 30 days", o, o.ByKey, keyLabel)
	v := newView("Overview", p)
	v.Nav, v.Wide, v.Data = "overview", true, d
	h.render(w, r, http.StatusOK, "overview", v)
}

// spendChart draws a series' spend per day, the top labels stacked and
// the rest as "Other", and the table beside it: the largest maxTableRows
// labels and one line for the rest.
func spendChart(id, title string, o *dashboard.Overview, s *core.SpendSeries, label func(string) string) (template.HTML, []spendRow) {
	index := map[time.Time]int{}
	for i, d := range o.Days {
		index[d] = i
	}
	var series []draw.Series
	at := map[string]int{}
	other := -1
	for _, t := range s.Totals {
		if len(at) == dashboard.TopSeries {
			break
		}
		at[t.Label] = len(series)
		series = append(series, draw.Series{Label: label(t.Label), Values: make([]int64, len(o.Days))})
	}
	for _, p := range s.Days {
		i, ok := index[p.Day.UTC().Truncate(24*time.Hour)]
		if !ok {
			continue
		}
		j, ok := at[p.Label]
		if p.Other {
			if other < 0 {
				other = len(series)
				series = append(series, draw.Series{Label: "Other", Values: make([]int64, len(o.Days))})
			}
			j, ok = other, true
		}
		if ok {
			series[j].Values[i] += int64(p.Billed)
		}
	}
	var rows []spendRow
	rest := spendRow{}
	for i, t := range s.Totals {
		if i < maxTableRows {
			rows = append(rows, spendRow{Label: label(t.Label), Charges: t.Charges, Billed: t.Billed})
			continue
		}
		rest.Charges += t.Charges
		rest.Billed += t.Billed
	}
	if n := len(s.Totals) - maxTableRows; n > 0 {
		rest.Label = fmt.Sprintf("%d more", n)
		rows = append(rows, rest)
	}
	labels := make([]string, len(o.Days))
	for i, d := range o.Days {
		labels[i] = d.Format("2 Jan")
	}
	desc := "No spend in the last 30 days."
	if len(rows) > 0 {
		desc = fmt.Sprintf("%s spent over the last 30 days; the most by %s (%s). The table below the chart lists the figures.",
			usd(o.Billed), rows[0].Label, usd(rows[0].Billed))
	}
	b := &draw.Bars{ID: id, Title: title, Desc: desc, Labels: labels, Series: series,
		Format: func(v int64) string { return usd(core.Micros(v)) }}
	return b.SVG(), rows
}

// --- Receipts ------------------------------------------------------------------

type receiptsData struct {
	*dashboard.ReceiptsPage
	Filter   map[string]string
	NextURL  string
	KeyNames map[string]string
	Keys     []*core.Key
	Any      bool // some filter is set
}

// maxKeyChoices is how many keys the receipts filter offers as a list.
const maxKeyChoices = 50

// receiptFilters are the receipts list's query parameters.
var receiptFilters = []string{"from", "to", "mode", "key", "lane", "finish", "capped", "substituted"}

// parseDay reads a date field (2026-11-28); "" is no date.
func parseDay(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.DateOnly, s)
	return t, err == nil
}

// dayRange reads a from and a to date field as [from, the day after to),
// with the field that cannot be read.
func dayRange(vals map[string]string) (from, to time.Time, bad string) {
	var ok bool
	if from, ok = parseDay(vals["from"]); !ok {
		return from, to, "from"
	}
	if to, ok = parseDay(vals["to"]); !ok {
		return from, to, "to"
	}
	if !to.IsZero() {
		to = to.AddDate(0, 0, 1) // the whole of the last day
	}
	return from, to, ""
}

// refuseFilter says, beside the field and above the list, that a filter
// could not be read (the list is then shown unfiltered), and returns the
// page's status.
func refuseFilter(v *view, field string) int {
	v.Errors[field] = "This is not a value this filter takes; the list below is not filtered by it."
	v.Error = fmt.Sprintf("What was given for %q is not a value this filter takes; the list below is not filtered.", field)
	return http.StatusUnprocessableEntity
}

// yesNo reads a "yes"/"no" filter; "" is no filter.
func yesNo(s string) (*bool, bool) {
	switch s {
	case "":
		return nil, true
	case "yes":
		t := true
		return &t, true
	case "no":
		f := false
		return &f, true
	}
	return nil, false
}

// receiptQuery reads the receipts list's filters, with the field of the
// first one that cannot be read.
func receiptQuery(form url.Values) (core.ReceiptQuery, map[string]string, string) {
	vals := map[string]string{}
	for _, f := range receiptFilters {
		vals[f] = strings.TrimSpace(form.Get(f))
	}
	q := core.ReceiptQuery{Mode: vals["mode"], KeyID: vals["key"], Lane: core.Lane(vals["lane"]), FinishReason: vals["finish"]}
	for _, f := range receiptFilters {
		if !queryable(vals[f]) {
			return q, vals, f
		}
	}
	var bad string
	if q.From, q.To, bad = dayRange(vals); bad != "" {
		return q, vals, bad
	}
	var ok bool
	if q.Lane != "" && q.Lane != core.LaneExpress && q.Lane != core.LanePanel {
		return q, vals, "lane"
	}
	if q.Capped, ok = yesNo(vals["capped"]); !ok {
		return q, vals, "capped"
	}
	if q.Substituted, ok = yesNo(vals["substituted"]); !ok {
		return q, vals, "substituted"
	}
	if at, id := form.Get("after"), form.Get("after_id"); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil || !queryable(id) {
			return q, vals, "after"
		}
		q.After = &core.ReceiptCursor{CreatedAt: t, RequestID: id}
	}
	return q, vals, ""
}

// queryable reports whether a filter's value can be sent to the database
// as text (no NUL, valid UTF-8, a sane length).
func queryable(s string) bool { return len(s) <= 200 && carrier.Text(s) }

func (h *handler) receiptsPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	if id := strings.TrimSpace(r.URL.Query().Get("request_id")); id != "" {
		http.Redirect(w, r, "/receipts/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	q, vals, bad := receiptQuery(r.URL.Query())
	v := newView("Receipts", p)
	v.Nav, v.Wide = "receipts", true
	d := &receiptsData{Filter: vals, KeyNames: map[string]string{}}
	for _, f := range receiptFilters {
		d.Any = d.Any || vals[f] != ""
	}
	status := http.StatusOK
	if bad != "" {
		status = refuseFilter(v, bad)
		q = core.ReceiptQuery{}
	}
	page, err := h.dash.Receipts(r.Context(), p, q)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	d.ReceiptsPage = page
	// A choice of keys while they are few; past that, the key's id.
	if keys, err := h.people.KeysPage(r.Context(), p, nil, maxKeyChoices+1); err == nil && len(keys) <= maxKeyChoices {
		d.Keys = keys
	}
	var ids []string
	for _, row := range page.Rows {
		if row.KeyID != "" {
			ids = append(ids, row.KeyID)
		}
	}
	if keys, err := h.people.KeyNames(r.Context(), p, ids); err == nil {
		for _, k := range keys {
			d.KeyNames[k.ID] = k.Name
		}
	}
	if page.Next != nil {
		next := url.Values{}
		for _, f := range receiptFilters {
			if vals[f] != "" {
				next.Set(f, vals[f])
			}
		}
		next.Set("after", page.Next.CreatedAt.UTC().Format(time.RFC3339Nano))
		next.Set("after_id", page.Next.RequestID)
		d.NextURL = "/receipts?" + next.Encode()
	}
	v.Data = d
	h.render(w, r, status, "receipts", v)
}

// receiptData is one receipt's page.
type receiptData struct {
	Receipt  *core.Receipt
	Outcome  *core.CallOutcome
	Answer   template.HTML
	Timeline template.HTML
	Calls    []callView
	KeyName  string
	Capped   bool
}

// callView is one engine call of a receipt, as its page lists it.
type callView struct {
	core.ReceiptCall
	Kind    string // "Seat" or "Staff"
	Label   string // "Round 2 · seat-1", "Judge · round 1"
	Outcome string
	Text    template.HTML
}

// attemptOf is a call's outcome, for receipts written before the record
// of each attempt: an answered call won, any other failed.
func attemptOf(c core.ReceiptCall) string {
	if c.Attempt != "" {
		return c.Attempt
	}
	if c.Content != "" || c.Answered {
		return core.AttemptWon
	}
	return core.AttemptFailed
}

// callLabel names the row a call is drawn on.
func callLabel(c core.ReceiptCall, seat bool) string {
	round := 0
	if c.RoundNumber != nil {
		round = *c.RoundNumber
	}
	role := c.Role
	if seat {
		if c.Seat != "" {
			role = c.Seat
		}
		return fmt.Sprintf("Round %d · %s", round, role)
	}
	if role == "" {
		role = "call"
	}
	name := strings.ToUpper(role[:1]) + role[1:]
	if role == "classifier" {
		return name
	}
	return fmt.Sprintf("%s · round %d", name, round)
}

// engineLabel names a call's engine and what it ran as.
func engineLabel(c core.ReceiptCall) string {
	switch {
	case c.Hedged:
		return c.ModelUsed + " (hedge)"
	case c.FallbackUsed != nil && *c.FallbackUsed:
		return c.ModelUsed + " (backup)"
	}
	return c.ModelUsed
}

// outcomeWords says an outcome as the page shows it.
var outcomeWords = map[string]string{
	core.AttemptWon:       "used",
	core.AttemptAnswered:  "answered, not used",
	core.AttemptCut:       "cut at quorum",
	core.AttemptCancelled: "cancelled",
	core.AttemptFailed:    "failed",
}

// timeline draws a receipt's calls: a row per seat of each round and per
// staff role, each call a bar from its start to its end.
func timeline(rc *core.Receipt, calls []callView) template.HTML {
	if len(calls) == 0 {
		return ""
	}
	origin := calls[0].StartedAt
	var end time.Time
	for _, c := range calls {
		if c.StartedAt.Before(origin) {
			origin = c.StartedAt
		}
		if c.EndedAt.After(end) {
			end = c.EndedAt
		}
	}
	var rows []draw.Row
	at := map[string]int{}
	roundStart := map[int]time.Duration{}
	for _, c := range calls {
		i, ok := at[c.Label]
		if !ok {
			i = len(rows)
			at[c.Label] = i
			rows = append(rows, draw.Row{Label: c.Label})
		}
		start, stop := c.StartedAt.Sub(origin), c.EndedAt.Sub(origin)
		detail := fmt.Sprintf("%s: %s · %s tokens in, %s out · %s · %s", engineLabel(c.ReceiptCall), outcomeWords[c.Outcome],
			core.Thousands(int64(c.TokensIn)), core.Thousands(int64(c.TokensOut)), usd(c.RealCost+c.Fee), spellDuration(stop-start))
		if c.ErrorClass != "" {
			detail += " (" + c.ErrorClass + ")"
		}
		outcome := c.Outcome
		if outcome == core.AttemptCut {
			outcome = "cut"
		}
		rows[i].Spans = append(rows[i].Spans, draw.Span{Label: engineLabel(c.ReceiptCall), Start: start, End: stop, Outcome: outcome, Detail: detail})
		if c.Kind == "Seat" && c.RoundNumber != nil {
			if s, ok := roundStart[*c.RoundNumber]; !ok || start < s {
				roundStart[*c.RoundNumber] = start
			}
		}
	}
	var marks []draw.Mark
	for n := 1; n <= len(roundStart); n++ {
		if s, ok := roundStart[n]; ok {
			marks = append(marks, draw.Mark{At: s, Label: fmt.Sprintf("round %d", n)})
		}
	}
	rounds := 0
	if rc.Rounds != nil {
		rounds = *rc.Rounds
	}
	t := &draw.Timeline{ID: "timeline", Title: "How the deliberation ran",
		Desc: fmt.Sprintf("%d engine calls over %d rounds in %s; each bar is one call from its start to its end. The table below lists every call.",
			len(calls), rounds, spellDuration(end.Sub(origin))),
		Total: end.Sub(origin), Rows: rows, Marks: marks}
	return t.SVG()
}

func spellDuration(d time.Duration) string {
	ms := d.Milliseconds()
	return spellMS(&ms)
}

func (h *handler) receiptPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	id := r.PathValue("id")
	a, err := h.dash.Receipt(r.Context(), p, id)
	var ce *core.Error
	if errors.As(err, &ce) && ce.Code == core.CodeReceiptNotFound {
		h.message(w, r, http.StatusNotFound, "No such receipt", ce.Message)
		return
	}
	if err != nil {
		h.failed(w, r, err)
		return
	}
	v := newView("Receipt "+id, p)
	v.Nav, v.Wide = "receipts", true
	v.Data = h.receiptView(r, p, a)
	h.render(w, r, http.StatusOK, "receipt", v)
}

// receiptView is a receipt's figures as its page draws them: every engine
// call in the order it started, the timeline, the answer when the
// transcript was kept, the key's name.
func (h *handler) receiptView(r *http.Request, p *access.Principal, a *calls.ReceiptAnswer) *receiptData {
	d := &receiptData{Receipt: a.Receipt, Outcome: a.Outcome}
	if rc := a.Receipt; rc != nil {
		d.Capped = rc.Status == "capped"
		for _, group := range []struct {
			kind  string
			calls []core.ReceiptCall
		}{{"Seat", rc.Seats}, {"Staff", rc.Staff}} {
			for _, c := range group.calls {
				cv := callView{ReceiptCall: c, Kind: group.kind, Label: callLabel(c, group.kind == "Seat"), Outcome: attemptOf(c)}
				if c.Content != "" {
					cv.Text = markdown.Render(c.Content)
				}
				d.Calls = append(d.Calls, cv)
			}
		}
		sort.SliceStable(d.Calls, func(i, j int) bool { return d.Calls[i].StartedAt.Before(d.Calls[j].StartedAt) })
		d.Timeline = timeline(rc, d.Calls)
		var stored struct {
			Answer string `json:"answer"`
		}
		// A receipt kept without its transcript may still hold the answer
		// stored for replays: it is not the receipt's to show.
		if !rc.TranscriptDropped && len(rc.Response) > 0 && json.Unmarshal(rc.Response, &stored) == nil && stored.Answer != "" {
			d.Answer = markdown.Render(stored.Answer)
		}
		if rc.KeyID != "" {
			if keys, err := h.people.KeyNames(r.Context(), p, []string{rc.KeyID}); err == nil && keys[rc.KeyID] != nil {
				d.KeyName = keys[rc.KeyID].Name
			}
		}
	}
	return d
}

// --- Money ---------------------------------------------------------------------

type moneyData struct {
	Money     *core.MoneyState
	Allowance core.Micros
	Page      *dashboard.JournalPage
	Filter    map[string]string
	Kinds     map[string]string
	NextURL   string
	Export    string // the filters' query, for the export links
	Ticker    string
	OrgID     string
}

// journalQuery reads the money page's filters.
func journalQuery(form url.Values) (core.JournalQuery, map[string]string, string) {
	vals := map[string]string{"kind": form.Get("kind"), "from": form.Get("from"), "to": form.Get("to")}
	q := core.JournalQuery{Kind: vals["kind"]}
	if q.Kind != "" {
		if _, ok := postingLabels[q.Kind]; !ok {
			return q, vals, "kind"
		}
	}
	var bad string
	if q.From, q.To, bad = dayRange(vals); bad != "" {
		return q, vals, bad
	}
	if b := form.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return q, vals, "before"
		}
		q.Before = n
	}
	return q, vals, ""
}

func (h *handler) moneyPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	q, vals, bad := journalQuery(r.URL.Query())
	v := newView("Money", p)
	v.Nav, v.Wide = "money", true
	status := http.StatusOK
	if bad != "" {
		status = refuseFilter(v, bad)
		q = core.JournalQuery{}
	}
	money, err := h.dash.Money(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	page, err := h.dash.Journal(r.Context(), p, q)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	d := &moneyData{Money: money, Allowance: h.dash.ActivationAllowance(), Page: page, Filter: vals, Kinds: postingLabels,
		Ticker: p.Org.Ticker, OrgID: p.Org.ID}
	filters := url.Values{}
	for k, val := range vals {
		if val != "" && bad == "" {
			filters.Set(k, val)
		}
	}
	d.Export = filters.Encode()
	if page.Next != 0 {
		next := url.Values{}
		for k, val := range filters {
			next[k] = val
		}
		next.Set("before", strconv.FormatInt(page.Next, 10))
		d.NextURL = "/money?" + next.Encode()
	}
	v.Data = d
	h.render(w, r, status, "money", v)
}

// journalLine is a posting as the export writes it.
type journalLine struct {
	PostingID int64        `json:"posting_id"`
	CreatedAt time.Time    `json:"created_at"`
	Kind      string       `json:"kind"`
	Memo      string       `json:"memo"`
	AmountUSD core.Dollars `json:"amount_usd"`
	// AmountMicros is the same amount in integer micro-USD.
	AmountMicros int64 `json:"amount_micros"`
}

// exportJournal writes the journal matching the filters, every page of
// it, as CSV or as a JSON array, newest first. Nothing is buffered whole.
func (h *handler) exportJournal(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	q, _, bad := journalQuery(r.URL.Query())
	if bad != "" {
		h.message(w, r, http.StatusUnprocessableEntity, "Cannot export", "The filter "+bad+" has a value it does not take. Nothing was exported.")
		return
	}
	q.Before = 0
	asJSON := strings.HasSuffix(r.URL.Path, ".json")
	// Ask first, so that a refusal is a page and not a broken file.
	if _, err := h.dash.Journal(r.Context(), p, core.JournalQuery{Limit: 1}); err != nil {
		h.failed(w, r, err)
		return
	}
	name := "journal-" + strings.ToLower(p.Org.Ticker) + "-" + time.Now().UTC().Format("20060102")
	var (
		write  func(*core.JournalRow) error
		finish func() error
	)
	if asJSON {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.json"`)
		first := true
		enc := json.NewEncoder(w)
		_, _ = w.Write([]byte("["))
		write = func(row *core.JournalRow) error {
			if !first {
				if _, err := w.Write([]byte(",")); err != nil {
					return err
				}
			}
			first = false
			return enc.Encode(lineOf(row))
		}
		finish = func() error { _, err := w.Write([]byte("]\n")); return err }
	} else {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"posting_id", "created_at", "kind", "memo", "amount_usd", "amount_micros"})
		write = func(row *core.JournalRow) error {
			l := lineOf(row)
			return cw.Write([]string{strconv.FormatInt(l.PostingID, 10), l.CreatedAt.Format(time.RFC3339Nano), l.Kind,
				csvSafe(l.Memo), core.Micros(l.AmountUSD).String(), strconv.FormatInt(l.AmountMicros, 10)})
		}
		finish = func() error { cw.Flush(); return cw.Error() }
	}
	if err := h.dash.EachPosting(r.Context(), p, q, write); err != nil {
		// The answer has begun: it can only be cut short. Say so in the log;
		// the file is then visibly incomplete (no closing bracket).
		h.log.Warn("exporting the journal", "error", err.Error())
		return
	}
	_ = finish()
}

func lineOf(row *core.JournalRow) journalLine {
	return journalLine{PostingID: row.PostingID, CreatedAt: row.CreatedAt.UTC(), Kind: row.Kind, Memo: row.Memo,
		AmountUSD: core.Dollars(row.Amount), AmountMicros: int64(row.Amount)}
}

// csvSafe keeps a spreadsheet from reading a memo as a formula.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// --- Provider keys (BYOK) --------------------------------------------------------

type byokData struct {
	Providers []*dashboard.ProviderState
	Manage    bool
	Enabled   bool
	Tested    string
	Result    *core.ProviderTest
	Remove    string
}

// providerNames are the BYOK providers as a person reads them.
var providerNames = map[string]string{
	core.ProviderOpenAI: "OpenAI", core.ProviderAnthropic: "Anthropic", core.ProviderGoogle: "Google",
	core.ProviderMistral: "Mistral", core.ProviderAWS: "AWS (Bedrock role)",
}

func (h *handler) byokView(w http.ResponseWriter, r *http.Request, status int, v *view, d *byokData) {
	p := principalOf(r.Context())
	var err error
	if d.Providers, d.Manage, d.Enabled, err = h.dash.Providers(r.Context(), p); err != nil {
		h.failed(w, r, err)
		return
	}
	v.Nav, v.Data = "byok", d
	h.render(w, r, status, "byok", v)
}

func (h *handler) byokPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	v := newView("Provider keys", principalOf(r.Context()))
	v.Notice = notice(r)
	h.byokView(w, r, http.StatusOK, v, &byokData{})
}

func (h *handler) setBYOK(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	provider := r.PathValue("provider")
	if !core.ValidBYOKProvider(provider) {
		h.notFound(w, r)
		return
	}
	_, err := h.people.SetBYOK(r.Context(), p, provider, r.PostFormValue("api_key"), r.PostFormValue("role_arn"), r.PostFormValue("external_id"))
	if err != nil {
		v := newView("Provider keys", p)
		v.Values["provider"] = provider
		v.Values["role_arn"], v.Values["external_id"] = r.PostFormValue("role_arn"), r.PostFormValue("external_id")
		if status, ok := fieldError(w, err, v); ok {
			for f, msg := range v.Errors {
				v.Errors[provider+"-"+f] = msg
			}
			h.byokView(w, r, status, v, &byokData{})
			return
		}
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/byok?done=byok-set#"+provider, http.StatusSeeOther)
}

func (h *handler) testBYOK(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	provider := r.PathValue("provider")
	res, err := h.dash.TestProvider(r.Context(), p, provider)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	v := newView("Provider keys", p)
	h.byokView(w, r, http.StatusOK, v, &byokData{Tested: provider, Result: res})
}

func (h *handler) confirmRemoveBYOK(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	provider := r.PathValue("provider")
	if !core.ValidBYOKProvider(provider) {
		h.notFound(w, r)
		return
	}
	if !h.people.Allowed(r.Context(), p, core.ActionBYOKWrite) {
		h.failed(w, r, core.Errorf(core.CodeForbidden, "Only owners may remove a provider key."))
		return
	}
	v := newView("Remove the "+providerNames[provider]+" key", p)
	v.Nav, v.Data = "byok", &byokData{Remove: provider}
	h.render(w, r, http.StatusOK, "byok-remove", v)
}

func (h *handler) removeBYOK(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	if err := h.people.RemoveBYOK(r.Context(), principalOf(r.Context()), r.PathValue("provider")); err != nil {
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/byok?done=byok-removed", http.StatusSeeOther)
}

// --- Audit -----------------------------------------------------------------------

type auditData struct {
	Page    *dashboard.AuditPage
	Filter  map[string]string
	NextURL string
	Actions []string
	Names   map[string]string
}

func (h *handler) auditPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	form := r.URL.Query()
	vals := map[string]string{"action": form.Get("action"), "actor": form.Get("actor"), "from": form.Get("from"), "to": form.Get("to")}
	v := newView("Audit trail", p)
	v.Nav, v.Wide = "audit", true
	f := core.AuditFilter{Action: vals["action"], ActorID: vals["actor"]}
	status := http.StatusOK
	var bad string
	f.From, f.To, bad = dayRange(vals)
	if at, id := form.Get("after"), form.Get("after_id"); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		n, nerr := strconv.ParseInt(id, 10, 64)
		if err != nil || nerr != nil {
			bad = "after"
		} else {
			f.After = &core.AuditCursor{At: t, ID: n}
		}
	}
	if (f.Action != "" && !slices.Contains(core.AuditActions, f.Action)) || !queryable(f.ActorID) {
		bad = "action"
	}
	if bad != "" {
		status = refuseFilter(v, bad)
		f = core.AuditFilter{}
	}
	page, err := h.dash.Audit(r.Context(), p, f)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	d := &auditData{Page: page, Filter: vals, Actions: core.AuditActions, Names: map[string]string{}}
	if members, err := h.people.Members(r.Context(), p); err == nil {
		for _, m := range members {
			d.Names[m.ID] = m.Email
		}
	}
	if page.Next != nil {
		next := url.Values{}
		for k, val := range vals {
			if val != "" && bad == "" {
				next.Set(k, val)
			}
		}
		next.Set("after", page.Next.At.UTC().Format(time.RFC3339Nano))
		next.Set("after_id", strconv.FormatInt(page.Next.ID, 10))
		d.NextURL = "/audit?" + next.Encode()
	}
	v.Data = d
	h.render(w, r, status, "audit", v)
}

// --- A key's limits ------------------------------------------------------------------

type limitsData struct {
	Key                      *core.Key
	RPM, Concurrency, Input  int // the key's limits now
	MaxRPM, MaxConc, MaxInpt int // the most it may be given
}

func (h *handler) limitsView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalOf(r.Context())
	k, err := h.revocable(r)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	d := &limitsData{Key: k}
	d.MaxRPM, d.MaxConc, d.MaxInpt = h.dash.Ceilings(k, p.Org)
	d.RPM, d.Concurrency, d.Input = h.dash.Limits(k, p.Org)
	v.Nav, v.Data = "keys", d
	h.render(w, r, status, "limits", v)
}

func (h *handler) keyLimitsPage(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	h.limitsView(w, r, http.StatusOK, newView("Limits", principalOf(r.Context())))
}

func (h *handler) setKeyLimits(w http.ResponseWriter, r *http.Request) {
	if !h.needOrg(w, r) {
		return
	}
	p := principalOf(r.Context())
	v := newView("Limits", p)
	l := &core.KeyLimits{}
	for _, f := range []struct {
		name string
		dst  **int
	}{{"rpm", &l.RPM}, {"concurrency", &l.Concurrency}, {"max_input_tokens", &l.MaxInputTokens}} {
		raw := strings.TrimSpace(r.PostFormValue(f.name))
		v.Values[f.name] = raw
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			v.Errors[f.name] = "Give a whole number."
			continue
		}
		*f.dst = &n
	}
	if len(v.Errors) > 0 {
		h.limitsView(w, r, http.StatusUnprocessableEntity, v)
		return
	}
	_, err := h.dash.SetKeyLimits(r.Context(), p, r.PathValue("id"), l)
	var le *dashboard.LimitError
	if errors.As(err, &le) {
		v.Errors[le.Field] = le.Message
		h.limitsView(w, r, http.StatusUnprocessableEntity, v)
		return
	}
	if err != nil {
		h.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/keys?done=limits", http.StatusSeeOther)
}
