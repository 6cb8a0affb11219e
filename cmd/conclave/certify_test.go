package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/core/modes/modestest"
	"github.com/conclavehq/conclave/internal/localpg"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// Certification end to end, through the built binary on the in-process
// simulator: an organisation authors, releases and lists a mode, the
// operator approves it, POST /v1/certify charges $50 once and the batch's
// 150 questions are answered by the mode and its baseline and judged by
// the three simulated judges, twice each. The simulator's quality model
// decides whether the mode is better than its baseline: a synthesis lift
// makes the panel's answer better than any one seat's.

// certifyConfig writes the replicas' configuration: the simulator's
// latency profile at scale (its waits × scale), the quality model's
// synthesis lift, the question workers of each replica and the timeout of
// a question's run (a dead replica's questions are rescued after it and
// half of it again).
func certifyConfig(t testing.TB, profile string, scale, lift float64, workers int, timeout time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	yaml := fmt.Sprintf(`simulator:
  profile: %s
  time_scale: %g
  quality:
    synthesis_lift: %g
jobs:
  bench_workers: %d
  bench_timeout: %s
log:
  level: warn
`, profile, scale, lift, workers, timeout)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// listedMode has a new organisation author ACME:PANL (modestest's valid
// spec: atlas, sonnet and gemini-flash at plus, so sonnet is the
// baseline), release, list it, and the operator approve it — which makes
// version 1 the certified one — then release version 2, a new description
// of the same panel, which a certification must certify; the organisation
// is verified and funded. It returns the organisation's id and key.
func listedMode(t testing.TB, env []string, base string) (string, string) {
	t.Helper()
	org := adminJSON(t, env, "org", "create", "--name", "Acme Research", "--ticker", "ACME")["org_id"].(string)
	key := adminJSON(t, env, "key", "create", "--org", org, "--name", "certify", "--rpm", "10000")["key"].(string)
	adminJSON(t, env, "org", "verify", "--org", org)
	adminJSON(t, env, "balance", "add", "--org", org, "--usd", "120")
	modes := base + "/v1/modes"
	jsonOf(t, "POST", modes, key, `{"spec":`+modestest.ValidSpec+`}`, http.StatusCreated)
	jsonOf(t, "POST", modes+"/ACME:PANL/release", key, `{}`, http.StatusOK)
	jsonOf(t, "POST", modes+"/ACME:PANL/listing", key, `{}`, http.StatusOK)
	require.Equal(t, "approved", adminJSON(t, env, "listing", "approve", "--mode", "ACME:PANL")["listing"])
	v2 := strings.Replace(modestest.ValidSpec, "Three seats from three provider families.", "Three seats, three families, one synthesis.", 1)
	jsonOf(t, "POST", modes, key, `{"mode_id":"ACME:PANL","spec":`+v2+`}`, http.StatusOK)
	rel := jsonOf(t, "POST", modes+"/ACME:PANL/release", key, `{}`, http.StatusOK)
	require.Equal(t, 2.0, rel["version"].(map[string]any)["version"])
	require.Equal(t, 1.0, jsonOf(t, "GET", modes+"/acme-panl", key, "", http.StatusOK)["certified_version"])
	return org, key
}

// launchCertify launches the certification of acme-panl and returns its
// batch id, checking the launch's answer.
func launchCertify(t testing.TB, base, key string) string {
	t.Helper()
	l := jsonOf(t, "POST", base+"/v1/certify", key, `{"model":"acme-panl"}`, http.StatusOK)
	require.Equal(t, 150.0, l["total_questions"], "%v", l)
	require.Equal(t, "acme-panl", l["model"])
	require.Equal(t, 50.0, l["billed_usd"])
	return l["batch_id"].(string)
}

// waitBatch polls a certification until it is complete or failed, or
// the deadline passes, calling each with the batch while it runs.
func waitBatch(t testing.TB, base, key, id string, deadline time.Duration, each func(batch map[string]any)) map[string]any {
	t.Helper()
	end := time.Now().Add(deadline)
	var last map[string]any
	for time.Now().Before(end) {
		last = jsonOf(t, "GET", base+"/v1/certify?batch_id="+id, key, "", http.StatusOK)
		b := last["batch"].(map[string]any)
		if s := b["status"]; s == "complete" || s == "failed" {
			return last
		}
		if each != nil {
			each(b)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("batch %s did not finish within %s: %v", id, deadline, last["batch"])
	return nil
}

func progressOf(b map[string]any) (judged, failed int) {
	p := b["progress"].(map[string]any)
	return int(p["judged"].(float64)), int(p["failed"].(float64))
}

// certifyCharges is what the journal charged the organisation for
// certifications: the postings and their total.
func certifyCharges(t *testing.T, conn *pgx.Conn, org string) (postings int, micros int64) {
	t.Helper()
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(-l.amount_micros), 0)
		FROM journal_legs l JOIN postings p ON p.id = l.posting_id
		WHERE p.kind = 'certify_charge' AND l.org_id = $1 AND l.account = 'org_balance'`, org).Scan(&postings, &micros))
	return postings, micros
}

// A mode better than its baseline certifies, and a replica killed with
// SIGKILL in the middle of the run loses nothing: two replicas on one
// database work the batch's questions; one is killed while questions are
// in flight; the other (after River rescues the dead replica's jobs)
// finishes the batch, with every question judged and every judgment —
// 150 questions × 3 judges × 2 repeats — recorded exactly once. The
// batch's W, L and U are recomputed from the stored judgments by the
// test's own arithmetic.
func TestCertifyEndToEndSurvivesKill9(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	env := []string{"DATABASE_URL=" + url}
	cfg := certifyConfig(t, "quick", 0.01, 1.5, 24, 20*time.Second)
	a := startServe(t, t.TempDir(), env, "--config", cfg)
	defer a.stop(t)
	b := startServe(t, t.TempDir(), env, "--config", cfg)
	org, key := listedMode(t, env, a.base)

	id := launchCertify(t, a.base, key)
	// A repeat of the poll on the other replica reads the same batch.
	jsonOf(t, "GET", b.base+"/v1/certify?batch_id="+id, key, "", http.StatusOK)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	n, charged := certifyCharges(t, conn, org)
	require.Equal(t, 1, n, "one certify_charge posting")
	require.Equal(t, int64(50_000_000), charged, "$50 flat")

	// Kill b once questions are in flight on it: some judged, some not,
	// and b holding running jobs.
	killed := false
	done := waitBatch(t, a.base, key, id, 4*time.Minute, func(batch map[string]any) {
		if killed {
			return
		}
		judged, _ := progressOf(batch)
		var running int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE queue = 'bench' AND state = 'running'`).Scan(&running))
		if judged >= 10 && judged < 120 && running > 0 {
			require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
			<-b.done
			killed = true
			t.Logf("killed replica b with %d questions judged and %d jobs running", judged, running)
		}
	})
	require.True(t, killed, "the batch finished before a replica could be killed mid-run")
	batch := done["batch"].(map[string]any)
	require.Equal(t, "complete", batch["status"], "%v\nstderr:\n%s", batch, a.stderr)
	judged, failed := progressOf(batch)
	require.Equal(t, 150, judged, "no question lost: %v", batch["progress"])
	require.Zero(t, failed)

	// Every judgment once: 150 × 3 × 2 rows, unique by key.
	var rows, keys, questions int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (index, judge, repeat)), count(DISTINCT index)
		FROM batch_judgments WHERE batch_id = $1`, id).Scan(&rows, &keys, &questions))
	require.Equal(t, 150*3*2, rows)
	require.Equal(t, rows, keys, "no judgment duplicated")
	require.Equal(t, 150, questions)
	var pending int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM batch_questions WHERE batch_id = $1 AND state <> 'judged'`, id).Scan(&pending))
	require.Zero(t, pending)
	// Each answer and judgment records what it cost the service: the
	// baseline's, sim/sonnet at $3 and $15 per million tokens in and out
	// (core.CallCost), is exactly 3 µ$ a token in and 15 out.
	var baselineWrong, modeUnpriced, judgeUnpriced int
	require.NoError(t, conn.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE baseline_answer->>'engine' <> 'sim/sonnet' OR (baseline_answer->>'tokens_out')::bigint <= 0
				OR (baseline_answer->>'cost_micros')::bigint <> 3 * (baseline_answer->>'tokens_in')::bigint + 15 * (baseline_answer->>'tokens_out')::bigint),
			count(*) FILTER (WHERE (mode_answer->>'tokens_out')::bigint <= 0 OR (mode_answer->>'cost_micros')::bigint <= 0)
		FROM batch_questions WHERE batch_id = $1`, id).Scan(&baselineWrong, &modeUnpriced))
	require.Zero(t, baselineWrong, "baseline answers not priced at their tokens")
	require.Zero(t, modeUnpriced, "mode answers without tokens or cost")
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM batch_judgments WHERE batch_id = $1 AND cost_micros <= 0`, id).Scan(&judgeUnpriced))
	require.Zero(t, judgeUnpriced, "judgments without cost")
	n, charged = certifyCharges(t, conn, org)
	require.Equal(t, 1, n, "the run moved no more money")
	require.Equal(t, int64(50_000_000), charged)

	// The verdict, and the mode's certified version.
	cert := done["certification"].(map[string]any)
	t.Logf("certification: verdict %v, W %.4f [%.4f, %.4f]", cert["verdict"], cert["w"], cert["l"], cert["u"])
	require.Equal(t, "certified", cert["verdict"], "%v", cert)
	require.Equal(t, true, cert["mode_certified"])
	m := jsonOf(t, "GET", a.base+"/v1/modes/acme-panl", key, "", http.StatusOK)
	require.Equal(t, 2.0, m["certified_version"], "the version certified: %v", m)

	// W, L and U from the stored judgments.
	w, l, u := recompute(t, conn, id)
	require.InDelta(t, w, cert["w"].(float64), 1e-9, "W")
	require.InDelta(t, l, cert["l"].(float64), 1e-9, "L")
	require.InDelta(t, u, cert["u"].(float64), 1e-9, "U")
}

// A mode at parity — no synthesis lift: the panel's answer is the mean of
// its seats', and its baseline is its best seat — is charged and run, and
// does not certify.
func TestCertifyAtParityDoesNotCertify(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	env := []string{"DATABASE_URL=" + url}
	p := startServe(t, t.TempDir(), env, "--config", certifyConfig(t, "quick", 0.01, 0, 24, 20*time.Second))
	defer p.stop(t)
	_, key := listedMode(t, env, p.base)
	id := launchCertify(t, p.base, key)
	done := waitBatch(t, p.base, key, id, 4*time.Minute, nil)
	batch := done["batch"].(map[string]any)
	require.Equal(t, "complete", batch["status"], "%v\nstderr:\n%s", batch, p.stderr)
	cert := done["certification"].(map[string]any)
	t.Logf("certification: verdict %v, W %.4f [%.4f, %.4f]", cert["verdict"], cert["w"], cert["l"], cert["u"])
	require.NotEqual(t, "certified", cert["verdict"], "%v", cert)
	require.Equal(t, false, cert["mode_certified"])
	m := jsonOf(t, "GET", p.base+"/v1/modes/acme-panl", key, "", http.StatusOK)
	require.Equal(t, 1.0, m["certified_version"], "still the version approved: %v", m)
}

// recompute is CERTIFY.md's estimate, by this test's own arithmetic on the
// batch's rows: each question's ȳ is the mean of its valid judgments (the
// mode's win 1, a tie 0.5, the baseline's win 0; a missing judgment does
// not count); W is the bucket-stratified mean of ȳ (the buckets are equal,
// so the plain mean); its standard error is clustered by the bank's
// template family, with the CR1 factor G/(G−1)·(n−1)/(n−B); L and U are
// W ∓ t(0.975, G−B)·SE.
func recompute(t *testing.T, conn *pgx.Conn, batchID string) (w, l, u float64) {
	t.Helper()
	ctx := context.Background()
	type question struct {
		bucket, cluster string
		sum             float64
		m               int
	}
	qs := map[int]*question{}
	rows, err := conn.Query(ctx, `SELECT index, bucket, question_id FROM batch_questions WHERE batch_id = $1`, batchID)
	require.NoError(t, err)
	for rows.Next() {
		var i int
		var b, qid string
		require.NoError(t, rows.Scan(&i, &b, &qid))
		it, err := bank.Lookup(qid)
		require.NoError(t, err)
		qs[i] = &question{bucket: b, cluster: it.Template()}
	}
	require.NoError(t, rows.Err())
	rows, err = conn.Query(ctx, `SELECT index, verdict FROM batch_judgments WHERE batch_id = $1`, batchID)
	require.NoError(t, err)
	for rows.Next() {
		var i int
		var v string
		require.NoError(t, rows.Scan(&i, &v))
		score := map[string]float64{"mode": 1, "tie": 0.5, "baseline": 0}
		s, ok := score[v]
		if !ok {
			continue
		}
		qs[i].sum += s
		qs[i].m++
	}
	require.NoError(t, rows.Err())

	bucketSum, bucketN := map[string]float64{}, map[string]int{}
	n := 0
	for _, q := range qs {
		if q.m == 0 {
			continue
		}
		bucketSum[q.bucket] += q.sum / float64(q.m)
		bucketN[q.bucket]++
		n++
	}
	for b, c := range bucketN {
		w += float64(c) / float64(n) * bucketSum[b] / float64(c)
	}
	resid := map[string]float64{}
	for _, q := range qs {
		if q.m > 0 {
			resid[q.cluster] += q.sum/float64(q.m) - bucketSum[q.bucket]/float64(bucketN[q.bucket])
		}
	}
	var ss float64
	clusters := make([]string, 0, len(resid))
	for c := range resid {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	for _, c := range clusters {
		ss += resid[c] * resid[c]
	}
	g, nf, strata := float64(len(resid)), float64(n), float64(len(bucketN))
	se := math.Sqrt(g/(g-1)*(nf-1)/(nf-strata)*ss) / nf
	tq := studentQuantile975(g - strata)
	t.Logf("recomputed: n %d, clusters %d, W %.6f, SE %.6f, t %.6f", n, len(resid), w, se, tq)
	return w, w - tq*se, w + tq*se
}

// studentQuantile975 is the 0.975 quantile of Student's t with df degrees
// of freedom: the root of F(x) = 0.975, F by Simpson's rule on the
// density (2,000 panels on [0, x]), found by bisection. The error is far
// below 1e-12 for the dozens of degrees of freedom a certification has.
func studentQuantile975(df float64) float64 {
	lg1, _ := math.Lgamma((df + 1) / 2)
	lg2, _ := math.Lgamma(df / 2)
	c := math.Exp(lg1-lg2) / math.Sqrt(df*math.Pi)
	density := func(x float64) float64 { return c * math.Pow(1+x*x/df, -(df+1)/2) }
	cdf := func(x float64) float64 { // 0.5 + ∫_0^x
		const panels = 2000
		h := x / panels
		s := density(0) + density(x)
		for i := 1; i < panels; i++ {
			k := 2.0
			if i%2 == 1 {
				k = 4
			}
			s += k * density(float64(i)*h)
		}
		return 0.5 + s*h/3
	}
	lo, hi := 0.0, 20.0
	for range 100 {
		mid := (lo + hi) / 2
		if cdf(mid) < 0.975 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// The test's quantile is Student's: at one degree of freedom t(0.975) is
// tan(0.475π) exactly, and at many it tends to the normal's 1.959964.
func TestStudentQuantile975(t *testing.T) {
	require.InDelta(t, math.Tan(0.475*math.Pi), studentQuantile975(1), 1e-9)
	require.InDelta(t, 2.228138851986, studentQuantile975(10), 1e-9)
	require.InDelta(t, 1.959963984540, studentQuantile975(1e7), 1e-6)
}

// A PostgreSQL restart in the middle of a certification loses no question
// and judges none twice: the replica's jobs fail their writes while the
// database is down, River retries them once it is back, and each retry
// asks only for what was not recorded. The batch completes with every
// judgment — 150 × 3 × 2 — recorded once, and one charge.
func TestCertifySurvivesAPostgresRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A cluster of its own, which this test stops and starts; the server
	// may run as another OS user, which must traverse the directory.
	root, err := os.MkdirTemp("", "cclcert")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	dir := filepath.Join(root, "pg")
	cache, _ := localpg.DefaultInitCache("")
	start := func() *localpg.Cluster {
		pg, err := localpg.Start(ctx, localpg.Config{Dir: dir, Database: "conclave", Fast: true, InitCache: cache})
		require.NoError(t, err)
		return pg
	}
	pg := start()
	t.Cleanup(func() { _ = pg.Stop() })
	env := []string{"DATABASE_URL=" + pg.URL()}
	a := startServe(t, t.TempDir(), env, "--config", certifyConfig(t, "quick", 0.01, 1.5, 8, 20*time.Second))
	defer a.stop(t)
	org, key := listedMode(t, env, a.base)
	id := launchCertify(t, a.base, key)

	restarted := false
	done := waitBatch(t, a.base, key, id, 6*time.Minute, func(batch map[string]any) {
		if restarted {
			return
		}
		if judged, _ := progressOf(batch); judged >= 10 && judged < 120 {
			require.NoError(t, pg.Stop())
			time.Sleep(2 * time.Second) // the replica's writes fail meanwhile
			pg = start()
			// The replica reconnects by itself: its polls answer again.
			require.Eventually(t, func() bool {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/v1/certify?batch_id="+id, nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					return false
				}
				_ = res.Body.Close()
				return res.StatusCode == http.StatusOK
			}, time.Minute, 100*time.Millisecond, "the replica answers again after the restart")
			restarted = true
			t.Logf("PostgreSQL restarted with %d questions judged", judged)
		}
	})
	require.True(t, restarted, "the batch finished before PostgreSQL could be restarted mid-run")
	batch := done["batch"].(map[string]any)
	require.Equal(t, "complete", batch["status"], "%v\nstderr:\n%s", batch, a.stderr)
	judged, failed := progressOf(batch)
	require.Equal(t, 150, judged, "no question lost: %v", batch["progress"])
	require.Zero(t, failed)

	conn, err := pgx.Connect(ctx, pg.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var rows, keys int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (index, judge, repeat))
		FROM batch_judgments WHERE batch_id = $1`, id).Scan(&rows, &keys))
	require.Equal(t, 150*3*2, rows)
	require.Equal(t, rows, keys, "no judgment duplicated")
	n, charged := certifyCharges(t, conn, org)
	require.Equal(t, 1, n, "one certify_charge posting")
	require.Equal(t, int64(50_000_000), charged)
}
