package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/internal/jobs"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// batchCount numbers the batches storeBatch launches.
var batchCount atomic.Int64

// storeBatch launches a test batch of items through the real batch store,
// records a baseline answer to each — right for the items right names —
// and leaves the batch in status: complete, failed or running.
func storeBatch(t *testing.T, pool *pgxpool.Pool, org *core.Org, items []bank.Item, right func(i int) bool, baseline string, status runs.Status) {
	t.Helper()
	ctx := t.Context()
	q, err := jobs.NewQuestionQueue(pool, 0)
	require.NoError(t, err)
	store := pgstore.NewBatches(pool, q)
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", batchCount.Add(1))
	n := len(items)
	plan := &runs.Plan{Kind: runs.KindTest, Model: "acme-panl", Form: runs.FormBuckets, Counts: map[runs.Bucket]int{runs.BucketLight: n},
		Tiers: []core.Tier{core.TierPlus}, Judges: runs.Judges, Repeats: 1, Protocol: runs.ProtocolPairwise}
	b := &runs.Batch{ID: id, OrgID: org.ID, Kind: runs.KindTest, Model: "acme-panl", ModeID: "acme-panl", ModeKey: "panl", ModeVersion: 1,
		ModeConfigHash: "abc123", Plan: plan, Seed: 7, BankVersion: bank.Version, Status: runs.StatusQueued, Billed: core.Micros(n),
		Quote: &runs.Quote{Total: n, Cost: core.Micros(n), Minutes: n, Buckets: map[runs.Bucket]runs.BucketQuote{
			runs.BucketLight: {Questions: n, PerQuestion: 1, Cost: core.Micros(n)}}}}
	qs := make([]*runs.Question, n)
	for i, it := range items {
		qs[i] = &runs.Question{BatchID: id, Index: i, Bucket: runs.Bucket(it.Bucket), Tier: core.TierPlus, QuestionID: it.ID, Price: 1}
	}
	_, err = store.Launch(ctx, &runs.LaunchParams{Batch: b, Questions: qs, DailyLimit: 100})
	require.NoError(t, err)
	require.NoError(t, store.StartBatch(ctx, id))
	for i, it := range items {
		var text string
		switch {
		case it.Kind == bank.Open:
			text = "It depends on the team."
		case right(i):
			text = "Working it through.\n\nAnswer: " + it.Answer
		default:
			text = "Working it through.\n\nAnswer: " + it.WrongAnswers()[0]
		}
		_, err := store.RecordAnswer(ctx, id, i, runs.SideMode, &runs.Answer{Text: "mode", Engine: "acme-panl"})
		require.NoError(t, err)
		_, err = store.RecordAnswer(ctx, id, i, runs.SideBaseline, &runs.Answer{Text: text, Engine: baseline})
		require.NoError(t, err)
	}
	if status != runs.StatusRunning {
		_, err = store.FinishBatch(ctx, id, &runs.Outcome{Status: status, Result: []byte(`{}`), Failure: map[bool]string{true: "stopped"}[status == runs.StatusFailed]})
		require.NoError(t, err)
	}
}

// `conclave bank calibrate` reads the baseline answers of complete batches
// from PostgreSQL — not of running or failed ones — checks each against
// its bank item and reports the pass rate per bucket and family against
// the certification bands, flagging what falls outside; --baseline keeps
// one engine's answers.
func TestBankCalibrateReportsTheBaselinesPassRates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	org, _, err := pgstore.New(pool).CreateOrg(ctx, &core.CreateOrgParams{Name: "Calibration"})
	require.NoError(t, err)

	family := func(b bank.Bucket, name string) []bank.Item {
		pool, err := bank.Pool(bank.Version, b)
		require.NoError(t, err)
		var out []bank.Item
		for _, it := range pool {
			if it.Family == name {
				out = append(out, it)
			}
		}
		require.NotEmpty(t, out)
		return out
	}
	light := append(family(bank.Light, "knights"), family(bank.Light, "date-add")...) // 16 items
	hard := family(bank.Hard, "coins")                                                // 8 items
	open := family(bank.Medium, "decision-01")
	// Light: knights all right, date-add 6 of 8 — 14 of 16 overall; hard
	// coins all right (high, clearly: 8 of 8 against a band up to 40%).
	storeBatch(t, pool, org, append(append(light, hard...), open...), func(i int) bool { return i < 8 || i >= 10 }, "sim/sonnet", runs.StatusComplete)
	// Ignored: a failed batch and one still running, all wrong.
	storeBatch(t, pool, org, light, func(int) bool { return false }, "sim/sonnet", runs.StatusFailed)
	storeBatch(t, pool, org, light, func(int) bool { return false }, "sim/sonnet", runs.StatusRunning)
	// Another baseline's complete batch: light all wrong.
	storeBatch(t, pool, org, light, func(int) bool { return false }, "sim/opus", runs.StatusComplete)

	env := []string{"DATABASE_URL=" + url}
	rep := adminJSON(t, env, "bank", "calibrate", "--baseline", "sim/sonnet")
	require.Equal(t, bank.Version, rep["bank_version"])
	require.Equal(t, 1.0, rep["batches"])
	require.Equal(t, []any{"sim/sonnet"}, rep["baselines"])
	require.Equal(t, 1.0, rep["open"])
	buckets := rep["buckets"].([]any)
	require.Len(t, buckets, 2)
	lb, hb := buckets[0].(map[string]any), buckets[1].(map[string]any)
	require.Equal(t, "light", lb["bucket"])
	require.Equal(t, 16.0, lb["n"])
	require.Equal(t, 14.0, lb["passed"])
	require.InDelta(t, 0.875, lb["rate"], 1e-12)
	require.Nil(t, lb["flag"], "87.5% is inside 85–95%")
	require.Equal(t, "hard", hb["bucket"])
	require.Equal(t, "high", hb["flag"])
	require.Equal(t, true, hb["clear"])
	fams := map[string]map[string]any{}
	for _, f := range rep["families"].([]any) {
		f := f.(map[string]any)
		fams[f["bucket"].(string)+"/"+f["family"].(string)] = f
	}
	require.Len(t, fams, 3)
	require.Equal(t, "high", fams["light/knights"]["flag"], "8 of 8 is over 95%")
	require.Equal(t, 6.0, fams["light/date-add"]["passed"])
	require.Equal(t, "low", fams["light/date-add"]["flag"], "75% is under 85%")

	all := adminJSON(t, env, "bank", "calibrate")
	require.Equal(t, 2.0, all["batches"])
	require.Equal(t, []any{"sim/opus", "sim/sonnet"}, all["baselines"])
	require.Equal(t, 32.0, all["buckets"].([]any)[0].(map[string]any)["n"])

	out, stderr, code := runBinary(t, t.TempDir(), []string{"DATABASE_URL=" + url, "CONCLAVE_DATA_DIR="}, "bank", "calibrate", "--baseline", "sim/sonnet")
	require.Zero(t, code, stderr)
	t.Log("\n" + out)
	require.Contains(t, out, "baseline answers of 1 complete batches (baselines: sim/sonnet)")
	for _, line := range []string{"light    (all)", "hard     coins", "light    date-add"} {
		require.Contains(t, out, line, out)
	}
	require.Contains(t, lineOf(out, "hard     coins"), "high (clear)")
	require.Contains(t, lineOf(out, "light    date-add"), "low")
	require.NotContains(t, lineOf(out, "light    date-add"), "clear", "6 of 8 cannot rule out 85%")
}

func lineOf(text, prefix string) string {
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return fmt.Sprintf("no line starts with %q", prefix)
}
