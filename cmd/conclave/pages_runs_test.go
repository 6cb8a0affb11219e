package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/modes/modestest"
	"github.com/conclavehq/conclave/internal/browsertest"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// releasedMode has the owner save and release ACME:PANL (modestest's
// valid spec) through the modes service, and returns the owner's
// principal.
func releasedMode(t *testing.T, og *oauthGateway) *access.Principal {
	t.Helper()
	owner, err := og.g.db.store.PersonByEmail(t.Context(), og.email)
	require.NoError(t, err)
	p := og.principal(t, owner.ID)
	ctx := core.WithActor(t.Context(), p.Actor())
	saved, err := og.g.modes.Save(ctx, p, modes.SaveRequest{Spec: json.RawMessage(modestest.ValidSpec)})
	require.NoError(t, err)
	_, err = og.g.modes.Release(ctx, p, saved.Mode.ID, 0)
	require.NoError(t, err)
	return p
}

// noQueue enqueues nothing: a batch seeded through the store is finished
// by the test, not worked by the gateway's jobs.
type noQueue struct{}

func (noQueue) EnqueueQuestions(context.Context, pgx.Tx, string, string, int) error { return nil }
func (noQueue) CancelQuestions(context.Context, pgx.Tx, string, []int) error        { return nil }

// seedCertified writes a complete certification of acme-panl version 1
// whose verdict is certified, as the executor records one, with a report
// whose provenance names baseline; it returns its id.
func seedCertified(t *testing.T, og *oauthGateway, baseline string) string {
	t.Helper()
	ctx := t.Context()
	store := pgstore.NewBatches(og.g.db.pool, noQueue{})
	const id = "00000000-0000-4000-8000-00000000c0de"
	plan := &runs.Plan{Kind: runs.KindCertify, Model: "ACME:PANL", Form: runs.FormCertify, Tiers: []core.Tier{core.TierPlus},
		Judges: runs.Judges, Repeats: runs.CertifyRepeats, Protocol: runs.ProtocolPairwise,
		Counts: map[runs.Bucket]int{runs.BucketLight: 1, runs.BucketMedium: 1, runs.BucketHard: 1}}
	b := &runs.Batch{ID: id, OrgID: og.org.ID, Kind: runs.KindCertify, Model: "ACME:PANL", ModeID: "acme-panl", ModeKey: "panl",
		ModeVersion: 1, ModeConfigHash: "c0ffee", Plan: plan, Seed: 7, BankVersion: "test", Status: runs.StatusQueued, Billed: 3,
		Quote: &runs.Quote{Total: 3, Cost: 3, Minutes: 1, Buckets: map[runs.Bucket]runs.BucketQuote{}}}
	var qs []*runs.Question
	for i, bk := range runs.Buckets {
		qs = append(qs, &runs.Question{BatchID: id, Index: i, Bucket: bk, Tier: core.TierPlus, QuestionID: "q" + string(bk), Price: 1})
	}
	_, err := store.Launch(ctx, &runs.LaunchParams{Batch: b, Questions: qs, DailyLimit: 10})
	require.NoError(t, err)
	require.NoError(t, store.StartBatch(ctx, id))
	for i := range qs {
		_, err := store.RecordAnswer(ctx, id, i, runs.SideMode, &runs.Answer{Text: "mode", Engine: "acme-panl"})
		require.NoError(t, err)
		_, err = store.RecordAnswer(ctx, id, i, runs.SideBaseline, &runs.Answer{Text: "baseline", Engine: baseline})
		require.NoError(t, err)
		_, err = store.FinishQuestion(ctx, id, i, "")
		require.NoError(t, err)
	}
	rep := bench.Report{Kind: bench.KindCertify, Protocol: bench.Pairwise, Verdict: bench.Certified, Config: bench.DefaultConfig(),
		Attempt: 1, W: 0.58, SE: 0.03, Lower: 0.52, Upper: 0.64, DF: 40, Questions: 150, N: 150, Clusters: 43,
		JudgmentsPlanned: 900, JudgmentsValid: 896, FleissKappa: 0.61, PositionConsistency: 0.88, TieRate: 0.12,
		Provenance: bench.Provenance{BaselineID: baseline, BankVersion: "test"}}
	for i, bk := range []bench.Bucket{"light", "medium", "hard"} {
		w := bench.Stat(0.55 + 0.02*float64(i))
		rep.Buckets = append(rep.Buckets, bench.BucketReport{Bucket: bk, N: 50, W: w, SE: 0.05, Lower: w - 0.1, Upper: w + 0.1})
	}
	for i, j := range runs.Judges {
		w := bench.Stat(0.56 + 0.02*float64(i))
		rep.Judges = append(rep.Judges, bench.JudgeReport{Judge: string(j), Family: "family", Valid: 298, W: w, Lower: w - 0.07,
			Upper: w + 0.07, WWithout: 0.57, PositionConsistency: 0.87})
	}
	rep.Gates = []bench.Gate{
		{ID: "g1", Name: "sample", Passed: true, Checks: []bench.Check{{Figure: "valid_share", Value: 0.995, Op: ">=", Threshold: 0.95, Passed: true}}},
		{ID: "g2", Name: "judges", Passed: true, Checks: []bench.Check{{Figure: "w_without_judge", Subject: string(runs.JudgeNovaPro), Value: 0.57, Op: ">=", Threshold: 0.5, Passed: true}}},
		{ID: "g3", Name: "buckets", Passed: true, Checks: []bench.Check{{Figure: "bucket_upper", Subject: "light", Value: 0.65, Op: ">=", Threshold: 0.5, Passed: true}}},
		{ID: "g4", Name: "length", Passed: true, Checks: []bench.Check{{Figure: "length_drop", Value: 0.01, Op: "<=", Threshold: 0.05, Passed: true}}},
	}
	result, err := json.Marshal(rep)
	require.NoError(t, err)
	moved, err := store.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusComplete, Result: result,
		Certification: &runs.Certification{Verdict: runs.CertCertified, W: 0.58, L: 0.52, U: 0.64, ModeCertified: true,
			Gates: []runs.Gate{{Name: "sample", Passed: true}}}})
	require.NoError(t, err)
	require.True(t, moved)
	return id
}

// The run pages in Chromium: a test run is quoted by a dry run, launched
// once however often its confirmation is sent, followed while it runs and
// cancelled with its refund shown; a certified batch's certificate is
// published at a public address that names no engine or baseline model,
// and unpublishing it ends the address at once.
func TestRunPages(t *testing.T) {
	t.Parallel()
	// Slow enough that the run still has questions to cancel when the
	// page's cancel is clicked, even on a loaded machine: at 20 both light
	// questions were once answered first.
	og := startPages(t, func(c *config.Config) { c.Simulator.TimeScale = 60 })
	owner := releasedMode(t, og)
	ctx := og.ownerBrowser(t)

	// The list, empty, then the launch form and its quote.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/runs")))
	browsertest.WaitText(t, ctx, "No runs yet")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a[href="/runs/new?kind=test"]`)), chromedp.WaitVisible(chromedp.CSS(`#light`))))
	browsertest.Shoot(t, ctx, "runs-new")
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#light`), "2"), chromedp.SetValue(chromedp.CSS(`#medium`), "0"), chromedp.SetValue(chromedp.CSS(`#hard`), "0"),
		chromedp.Click(chromedp.CSS(`.run-form button[type=submit]`))))
	text := browsertest.WaitText(t, ctx, "Launch and pay")
	quote, err := og.g.bench.launch.Test(t.Context(), owner, runs.Key{}, &runs.TestRequest{Model: json.RawMessage(`"acme-panl"`),
		Buckets: json.RawMessage(`{"light":2}`), DryRun: json.RawMessage(`true`)})
	require.NoError(t, err)
	total, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#quote-total`)))
	require.NoError(t, err)
	require.Equal(t, "$"+quote.Quote.Cost.String(), total, "the page quotes what the service quotes")
	require.Contains(t, text, "asks 2 questions")
	browsertest.Shoot(t, ctx, "runs-quote")

	// The confirmation sent twice (once behind the page's back) launches
	// one batch.
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const f = document.querySelector('form.actions'); const d = new FormData(f); d.append('confirm', 'launch');
		return (await fetch('/runs/new', {method: 'POST', body: new URLSearchParams(d)})).url; })()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	browsertest.Click(t, ctx, `button[name=confirm]`)
	browsertest.WaitText(t, ctx, "Launched and charged")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(first, "?done=launched"), strings.TrimSuffix(loc, "?done=launched"))
	listed, err := og.g.bench.launch.List(t.Context(), owner)
	require.NoError(t, err)
	require.Len(t, listed, 1, "one launch")
	id := listed[0].ID

	// Its progress, live; then the cancel, and the refund.
	text = browsertest.WaitText(t, ctx, "questions done")
	require.Contains(t, text, "Refresh")
	browsertest.Shoot(t, ctx, "runs-running")
	browsertest.Click(t, ctx, `a[href$="/cancel"]`)
	browsertest.WaitText(t, ctx, "Cancel the test run?")
	browsertest.Click(t, ctx, `button.danger`)
	browsertest.WaitText(t, ctx, "Cancelled.")
	b, err := og.g.bench.launch.Batch(t.Context(), owner, runs.KindTest, id)
	require.NoError(t, err)
	require.Equal(t, runs.StatusCancelled, b.Status)
	require.Positive(t, b.Refunded, "the questions nothing was answered to are refunded")
	refunded, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#run-refunded`)))
	require.NoError(t, err)
	require.Equal(t, "$"+b.Refunded.String(), refunded)

	// A certified batch: its result drawn, its certificate, published.
	catalog, err := og.g.cfg.Catalog()
	require.NoError(t, err)
	var engines []string
	baseline := ""
	for e := range catalog.Engines() {
		engines = append(engines, e)
		if strings.Contains(e, "sonnet") {
			baseline = e
		}
	}
	require.NotEmpty(t, baseline)
	cert := seedCertified(t, og, baseline)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/runs")))
	browsertest.WaitText(t, ctx, "Certificate")
	browsertest.Shoot(t, ctx, "runs-list")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/runs/certify/"+cert)))
	text = browsertest.WaitText(t, ctx, "Verdict: Certified")
	require.Contains(t, text, "W = 0.58")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('figure.interval svg circle').length`))
	require.NoError(t, err)
	require.Equal(t, 7, n, "W, three buckets and three judges, each drawn")
	browsertest.Shoot(t, ctx, "runs-result")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/certificates/"+cert)))
	browsertest.WaitText(t, ctx, "Not published")
	browsertest.Click(t, ctx, `#publication button`)
	browsertest.WaitText(t, ctx, "Published: anyone")
	browsertest.Shoot(t, ctx, "certificate")
	public, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#public-url`)))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(public, og.origin+"/c/"), public)

	// Signed out, in a browser of its own: figures, and no model.
	anon := browsertest.New(t)
	require.NoError(t, chromedp.Do(anon, chromedp.Navigate(public)))
	browsertest.WaitText(t, anon, "certifies a privately run mode")
	html, err := chromedp.Run(anon, chromedp.OuterHTML(chromedp.CSS(`html`)))
	require.NoError(t, err)
	require.Contains(t, html, "0.58")
	for _, e := range append(engines, string(runs.JudgeNovaPro), string(runs.JudgeMistralLarge), string(runs.JudgeLlama4Maverick)) {
		require.NotContains(t, html, e, "the public certificate names no model")
	}
	browsertest.Shoot(t, anon, "certificate-public")

	// Unpublished: the address is gone at once.
	browsertest.Click(t, ctx, `#publication button`)
	browsertest.WaitText(t, ctx, "Not published")
	res, err := http.Get(public)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode, string(body))
	audited := 0
	require.NoError(t, og.g.db.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = $2 AND object = $3`,
		og.org.ID, core.AuditOrgSettings, cert).Scan(&audited))
	require.Equal(t, 2, audited, "published, then unpublished")
}

// Over HTTP: a member may read the runs but not publish a certificate; a
// batch of another kind or a made-up id is 404, and so is a public
// address never published; the progress poll answers its JSON; a
// certification's quote says the mode must be listed, and its launch is
// refused beside the mode; a bucket count out of range is refused beside
// its field.
func TestRunPagesRefusals(t *testing.T) {
	t.Parallel()
	og := startPages(t)
	owner := releasedMode(t, og)
	cert := seedCertified(t, og, "baseline")
	member := following(og.member(t, "mo@acme.example", "Mo Member"))
	ownerC := following(og.ownerClient(t))

	status, _ := pageOf(t, member, og.origin+"/runs")
	require.Equal(t, http.StatusOK, status)
	status, page := pageOf(t, member, og.origin+"/certificates/"+cert)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Owners publish")
	res, err := member.PostForm(og.origin+"/certificates/"+cert+"/publish", url.Values{"publish": {"on"}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	c, err := og.g.bench.launch.Certificate(t.Context(), owner, cert)
	require.NoError(t, err)
	require.Empty(t, c.PublicID, "off by default, and a member's attempt changed nothing")

	for _, path := range []string{"/runs/test/" + cert, "/runs/certify/00000000-0000-4000-8000-000000000000", "/runs/other/" + cert,
		"/c/0123456789abcdef0123456789abcdef", "/c/not-an-id"} {
		status, _ := pageOf(t, ownerC, og.origin+path)
		require.Equal(t, http.StatusNotFound, status, path)
	}

	status, page = pageOf(t, ownerC, og.origin+"/runs/certify/"+cert+"/progress")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"status":"complete","words":"Complete: 3 of 3 questions done (3 judged, 0 failed, 0 cancelled).",`+
		`"done":3,"total":3,"percent":100,"final":true}`, page)

	res, err = ownerC.PostForm(og.origin+"/runs/new", url.Values{"kind": {"test"}, "model": {"acme-panl"}, "light": {"500"},
		"tier": {"plus"}, "judge": {"nova_pro"}, "repeats": {"1"}, "protocol": {"pairwise"}})
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, string(body), `id="light-error"`)
	require.Contains(t, string(body), "buckets.light is a whole number from 1 to 100")

	res, err = ownerC.PostForm(og.origin+"/runs/new", url.Values{"kind": {"certify"}, "model": {"acme-panl"}})
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Contains(t, string(body), "asks <strong>150 questions</strong>")
	require.Contains(t, string(body), "Launch and pay $50.00")
	require.Contains(t, string(body), "must be listed in the marketplace before it can be certified")

	res, err = ownerC.PostForm(og.origin+"/runs/new", url.Values{"kind": {"certify"}, "model": {"acme-panl"}, "confirm": {"launch"}, "key": {"web-1"}})
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode, string(body))
	require.Contains(t, string(body), `id="model-error"`)
	require.Contains(t, string(body), "not listed in the marketplace")
}
