package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/loadtest"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// BenchmarkGatewayOverhead measures what the gateway's own code adds to a
// model call with the process boundaries taken away: the gateway (api
// handler, deliberation engine, providers and egress), the simulated
// provider and the load generator share this process and its Go runtime.
// cmd/conclave's BenchmarkServeOverhead measures the same call as deployed,
// each in a process of its own; the difference between the two is what
// crossing processes costs on this machine.
//
// A billed express call through the whole gateway (authentication, policy,
// input limit, admission in one trip to PostgreSQL, the express seat's call
// through adapter and egress over loopback HTTP, the bill, settlement with
// the receipt in one more trip; no request log) is timed against a direct
// call to the same simulated engine (answering at once: TimeScale 1e-6), at
// fixed open-loop arrival rates (package loadtest). PostgreSQL is durable,
// as deployed (a throwaway cluster whose synchronous commits wait for the
// disk), with the default pool of 20 connections. At each rate the direct
// calls and then the gateway calls run three seconds unmeasured, then for the
// window (4 s).
//
// Reported per rate: p50/p99 of the direct call and of the Conclave call,
// overhead_p50_ms/overhead_p99_ms = Conclave minus direct (beside the goals
// at 500 calls/s: p50 ≤ 1 ms, p99 ≤ 5 ms) and errors; then
// max_rate_under_10ms_p99 (see loadtest.OverheadSweep).
func BenchmarkGatewayOverhead(b *testing.B) {
	ctx := context.Background()
	cfg, err := config.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	pcfg, err := pgxpool.ParseConfig(pgtest.NewDurableDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	pcfg.MaxConns = cfg.Database.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	cb := setupChatBenchOn(b, sim.Config{TimeScale: 1e-6}, pool)
	if _, err := cb.store.AddFunds(ctx, &core.AddFundsParams{OrgID: cb.org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}, Timeout: time.Minute}
	b.Cleanup(client.CloseIdleConnections)

	simURL := cb.prov.Simulator().Endpoint("openai") + "/chat/completions"
	simKey := cb.prov.SimulatorKey()
	direct := func(i int) error {
		body := `{"model":"atlas","messages":[{"role":"user","content":"What is 2 + 2? (` + fmt.Sprint(i) + `)"}],"max_tokens":512}`
		req, _ := http.NewRequest("POST", simURL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+simKey)
		req.Header.Set("Content-Type", "application/json")
		return loadtest.SendOK(client, req)
	}
	gateway := func(i int) error {
		req, _ := http.NewRequest("POST", cb.srv.URL+"/v1/chat/completions",
			strings.NewReader(chatBody(benchExpressMode, fmt.Sprintf("What is 2 + 2? (%d)", i), "")))
		req.Header.Set("Authorization", "Bearer "+cb.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", core.NewID("bench"))
		return loadtest.SendOK(client, req)
	}
	loadtest.OverheadSweep(b, loadtest.Sweep{Window: 4 * time.Second, Direct: direct, Gateway: gateway})
}
