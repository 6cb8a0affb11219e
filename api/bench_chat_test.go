package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/policies"
)

// benchTwoRoundsMode is the mode the chat benchmark adds to the built-in
// catalog: a copy of conclave-standard (seats atlas, sonnet and
// gemini-flash on tier plus) that always critiques, for two rounds, and has
// no express lane.
const benchTwoRoundsMode = "bench-two-rounds"

// chatBench is a server that deliberates for real, like setupChat's: the
// engine, the simulated provider through the real adapters and egress,
// Postgres. Its simulator is the caller's.
type chatBench struct {
	srv   *httptest.Server
	store *pgstore.Store
	org   *core.Org
	key   string
	prov  *providers.Providers
}

func setupChatBench(b *testing.B, simCfg sim.Config) *chatBench {
	b.Helper()
	return setupChatBenchOn(b, simCfg, pgtest.NewPool(b))
}

// setupChatBenchOn is setupChatBench on the database of pool.
func setupChatBenchOn(b *testing.B, simCfg sim.Config, pool *pgxpool.Pool) *chatBench {
	b.Helper()
	ctx := context.Background()
	cfg, err := config.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	two := cfg.Modes[0]
	two.Key, two.ID, two.Ticker, two.Name = benchTwoRoundsMode, benchTwoRoundsMode, "CNCL:BTWO", "Bench two rounds"
	two.Critique, two.MaxRounds, two.ExpressThreshold = core.CritiqueAlways, 2, 0
	cfg.Modes = append(cfg.Modes, two, expressBenchMode(cfg.Modes[0]))
	catalog, err := cfg.Catalog()
	if err != nil {
		b.Fatal(err)
	}
	prov, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: simCfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { prov.Stop(context.Background()) })
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	if err != nil {
		b.Fatal(err)
	}
	authz, err := policies.New(ctx, policies.Config{})
	if err != nil {
		b.Fatal(err)
	}
	store := pgstore.New(pool)
	// The deployment's defaults where they matter to speed: keys cached for
	// 3 s.
	pt := &parts{store: store, authz: authz, catalog: catalog, deliberator: engine,
		registry: prometheus.NewRegistry(), limits: limits{KeyCacheTTL: 3 * time.Second}}
	h, _ := pt.serve(b)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Bench Org"})
	if err != nil {
		b.Fatal(err)
	}
	cb := &chatBench{srv: srv, store: store, org: org, prov: prov}
	// Limits far above the load: these benchmarks measure the engine, not
	// the rails.
	cb.key = (&testBundle{store: store, org: org}).newKey(b, &core.CreateKeyParams{RPM: 10_000_000, Concurrency: 1_000_000})
	return cb
}

// chat sends one chat completion and returns the status and the decoded
// panel block (nil when there is none).
func (cb *chatBench) chat(ctx context.Context, client *http.Client, body string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", cb.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cb.key)
	req.Header.Set("Content-Type", "application/json")
	// Every call is a new request: the same body would otherwise be
	// deduplicated by its derived idempotency key and replayed.
	req.Header.Set("Idempotency-Key", core.NewID("bench"))
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, err
	}
	var out struct {
		Panel map[string]any `json:"panel"`
	}
	if res.StatusCode == 200 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return res.StatusCode, nil, fmt.Errorf("decoding %s: %w", raw, err)
		}
	} else {
		return res.StatusCode, nil, fmt.Errorf("status %d: %s", res.StatusCode, raw)
	}
	return res.StatusCode, out.Panel, nil
}

// cpuTime is this process's CPU time so far, user plus system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChatCPU measures the CPU time (user + system, getrusage of this
// process) per chat completion with the simulated engines at near-zero
// latency (TimeScale 1e-6), sent sequentially over loopback HTTP:
//
//   - deliberation: a full panel — classifier, three seats, judge, a second
//     (critique) round of three seats, judge, synthesis — on a mode that
//     always critiques for two rounds; gemini-flash always dissents, so
//     round one never converges. The benchmark fails unless every call is
//     a 200 that ran exactly two rounds.
//   - express: "What is 2 + 2?" on conclave-standard, which the classifier
//     sends down the express lane (classifier and one seat), the comparison.
//
// The figure is everything this process spends: the HTTP client, the API
// (admission, policy, hold and settle through pgx, receipt), the engine,
// the adapters and egress, and the in-process simulated provider answering
// every engine call. Postgres runs in another process and is not counted.
// engine_calls/op counts the simulator's model calls.
func BenchmarkChatCPU(b *testing.B) {
	cb := setupChatBench(b, sim.Config{
		TimeScale: 1e-6,
		Engines:   map[string]sim.EngineProfile{"gemini-flash": {Dissent: 1}},
	})
	if _, err := cb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: cb.org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(client.CloseIdleConnections)
	cases := []struct {
		name, body, lane string
		rounds           float64
	}{
		{"deliberation", chatBody(benchTwoRoundsMode, "Should a twelve-person team split its monolith into microservices this year?", ""), "panel", 2},
		{"express", chatBody("conclave-standard", "What is 2 + 2?", ""), "express", 1},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			calls0 := cb.prov.Simulator().Stats().Total()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				status, panel, err := cb.chat(ctx, client, c.body)
				if err != nil || status != 200 {
					b.Fatalf("status %d: %v", status, err)
				}
				if panel["lane"] != c.lane || panel["rounds"] != c.rounds {
					b.Fatalf("lane %v, rounds %v: want %s, %v", panel["lane"], panel["rounds"], c.lane, c.rounds)
				}
			}
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			calls := cb.prov.Simulator().Stats().Total() - calls0
			b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu_ms/deliberation")
			b.ReportMetric(float64(calls)/float64(b.N), "engine_calls/op")
		})
	}
}

// benchExpressMode answers every question on the express lane with the
// heuristic classifier (no classifier engine): a billed call whose only
// model call is the express seat's.
const benchExpressMode = "bench-express"

// expressBenchMode is conclave-standard answering everything on the express
// lane with the heuristic classifier.
func expressBenchMode(base config.Mode) config.Mode {
	m := base
	m.Key, m.ID, m.Ticker, m.Name = benchExpressMode, benchExpressMode, "CNCL:BEXP", "Bench express"
	m.Staff = maps.Clone(base.Staff)
	delete(m.Staff, "classifier")
	m.ExpressThreshold = 1
	return m
}
