package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/heapfloor"
	"github.com/conclavehq/conclave/internal/loadtest"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// overheadMode is the overhead benchmark's mode: conclave-standard's seats
// and staff without a classifier engine and with an express threshold of 1,
// so every question is answered on the express lane by the heuristic
// classifier: a billed call whose only model call is the express seat's.
const overheadMode = "bench-express"

// BenchmarkServeOverhead measures what Conclave adds to a model call, as
// deployed: `conclave serve` in a process of its own, with the built-in
// configuration apart from its engines and its one mode (its request log
// included), on a durable PostgreSQL (a throwaway cluster whose synchronous
// commits wait for the disk, like the managed cluster `make run` starts);
// `conclave sim`, the simulated provider answering at once
// (--time-scale 1e-6), in a second process; this benchmark, the load
// generator, in a third. api's BenchmarkGatewayOverhead times the same call
// with all three in one process.
//
// A billed express call through the gateway (authentication, policy, input
// limit, admission in one trip to PostgreSQL — rate, concurrency slot,
// idempotency claim, hold — the express seat's call through adapter and
// egress to the simulator, the bill, settlement with the receipt in one
// more trip, the response) is timed against a direct call to the same
// simulated engine, at fixed open-loop arrival rates
// (loadtest.OverheadSweep, whose figures it reports), and it adds the
// gateway process's CPU per call in the measured window
// (gateway_cpu_ms/call).
//
// CONCLAVE_BENCH_OVERHEAD_WINDOW changes the window (default 6s),
// CONCLAVE_BENCH_OVERHEAD_RATES the rates (say "500"), and
// CONCLAVE_BENCH_GATEWAY_ENV adds variables to the gateway's environment
// alone (say "GOMAXPROCS=1").
func BenchmarkServeOverhead(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Fatal("the overhead benchmark reads the gateway's CPU time from /proc: ", err)
	}
	simURL := startSim(b, "--time-scale", "0.000001")
	dbURL := pgtest.NewDurableDatabase(b)
	key := inFlightKey(b, dbURL)
	dir := b.TempDir()
	cfgPath := filepath.Join(dir, "conclave.yaml")
	if err := os.WriteFile(cfgPath, []byte(overheadConfig(simURL)), 0o600); err != nil {
		b.Fatal(err)
	}
	env := append([]string{"DATABASE_URL=" + dbURL, "CONCLAVE_BENCH_SIM_KEY=bench"}, strings.Fields(os.Getenv("CONCLAVE_BENCH_GATEWAY_ENV"))...)
	gw := startServe(b, dir, env, "--config", cfgPath)
	b.Cleanup(func() { gw.stop(b) })
	pid := gw.cmd.Process.Pid

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}, Timeout: time.Minute}
	b.Cleanup(client.CloseIdleConnections)
	run := time.Now().UnixNano() // idempotency keys of this run
	direct := simChat(client, simURL+simChatPath)
	var calls atomic.Int64 // every gateway call has its own idempotency key
	gateway := func(i int) error {
		n := calls.Add(1)
		req, _ := http.NewRequest("POST", gw.base+"/v1/chat/completions",
			strings.NewReader(chatRequestBody(overheadMode, fmt.Sprintf("What is 2 + 2? (%d)", i))))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("overhead-%d-%d", run, n))
		return loadtest.SendOK(client, req)
	}
	// Both paths answer before anything is timed.
	if err := direct(-1); err != nil {
		b.Fatal("direct call: ", err)
	}
	if err := gateway(-1); err != nil {
		b.Fatal("gateway call: ", err)
	}
	processSweep(b, direct, gateway, pid, dbURL, "gateway_cpu_ms/call")
}

// processSweep runs the overhead sweep of a gateway in its own process
// (pid), with the window and rates from the environment, and reports per
// call in the measured window that process's CPU as cpuMetric, the CPU of
// the PostgreSQL cluster at dbURL (postmaster and every process it started:
// pg_cpu_ms/call) and the whole machine's (machine_cpu_ms/call: every
// process, the load generator and simulator included, and the kernel).
func processSweep(b *testing.B, direct, gateway func(i int) error, pid int, dbURL, cpuMetric string) {
	postmaster := postmasterPID(b, dbURL)
	loadtest.OverheadSweep(b, loadtest.Sweep{
		Window:  envDuration(b, "CONCLAVE_BENCH_OVERHEAD_WINDOW", 6*time.Second),
		Rates:   envCounts(b, "CONCLAVE_BENCH_OVERHEAD_RATES", nil), // nil: loadtest.DefaultRates
		Direct:  direct,
		Gateway: gateway,
		Around: func(b *testing.B, _ int, run func() loadtest.Result) loadtest.Result {
			cpu0, pg0, machine0 := procCPU(b, pid), clusterCPU(b, postmaster), machineCPU(b)
			g := run()
			n := float64(max(g.N, 1))
			b.ReportMetric(loadtest.MS(procCPU(b, pid)-cpu0)/n, cpuMetric)
			var pg time.Duration
			for p, t := range clusterCPU(b, postmaster) {
				pg += t - pg0[p] // a process started in the window counts whole
			}
			b.ReportMetric(loadtest.MS(pg)/n, "pg_cpu_ms/call")
			b.ReportMetric(loadtest.MS(machineCPU(b)-machine0)/n, "machine_cpu_ms/call")
			return g
		},
	})
}

// overheadConfig is the gateway's conclave.yaml: the built-in settings, the
// engines the mode uses pointed at the simulator at simURL, and the mode.
func overheadConfig(simURL string) string {
	return fmt.Sprintf(`%[2]smodes:
  - key: %[1]s
    id: %[1]s
    ticker: CNCL:BEXP
    name: Bench express
    description: conclave-standard on the express lane for every question, for the overhead benchmark.
    use_when: Never; it exists for the benchmark.
%[3]s    staff:
      judge: {engine: sim/sonnet, backup: sim/atlas}
      synthesis: {engine: sim/atlas, backup: sim/sonnet}
    critique: deep
    max_rounds: 2
    quorum: 2
    straggler_deadline: 20s
    express_threshold: 1
    cost_ceiling_usd: 1.50
    pricing:
      surcharge_by_depth: {light: 0.05, medium: 0.10, deep: 0.15}
      surcharge_usd: 0.15
`, overheadMode, simEngines(simURL, "sim/atlas", "sim/sonnet", "sim/gemini-flash"), benchSeats)
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	env := os.Getenv(name)
	if env == "" {
		return def
	}
	d, err := time.ParseDuration(env)
	if err != nil || d <= 0 {
		b.Fatalf("%s: %q is not a positive duration", name, env)
	}
	return d
}

// procCPU is the user and system CPU time the process pid has used.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	t, ok := statCPU(strings.Fields(s[strings.LastIndexByte(s, ')')+1:]))
	if !ok {
		b.Fatalf("reading /proc/%d/stat: %q", pid, s)
	}
	return t
}

// statCPU is utime + stime from the fields of a /proc/PID/stat line after
// the command's closing parenthesis: the 14th and 15th of the line, in
// clock ticks (USER_HZ, 100).
func statCPU(fields []string) (time.Duration, bool) {
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// postmasterPID is the process id of the PostgreSQL server at dbURL, whose
// Unix socket lives in its data directory (see localpg).
func postmasterPID(b *testing.B, dbURL string) int {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.Host, "postmaster.pid"))
	if err != nil {
		b.Fatal("finding the PostgreSQL server: ", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		b.Fatalf("postmaster.pid: %q", raw)
	}
	return pid
}

// clusterCPU is the CPU time used so far by the postmaster and each
// process it started (backends, WAL writer, checkpointer, autovacuum), by
// process id.
func clusterCPU(b *testing.B, postmaster int) map[int]time.Duration {
	out := map[int]time.Duration{postmaster: procCPU(b, postmaster)}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone since the listing
		}
		s := string(raw)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if ppid, _ := strconv.Atoi(fields[1]); ppid == postmaster {
			if t, ok := statCPU(fields); ok {
				out[pid] = t
			}
		}
	}
	return out
}

// machineCPU is the CPU time the whole machine has spent busy (user, nice,
// system, interrupts), over every CPU, from /proc/stat.
func machineCPU(b *testing.B) time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	// "cpu user nice system idle iowait irq softirq steal …", in clock ticks.
	fields := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %q", fields)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// simChatPath is the simulator's OpenAI-style chat endpoint.
const simChatPath = "/openai/v1/chat/completions"

// simChat is the load generator's call i of the simulated engine's own chat
// request to url: the simulator itself, or the overhead floor in front of it.
func simChat(client *http.Client, url string) func(i int) error {
	return func(i int) error {
		body := `{"model":"atlas","messages":[{"role":"user","content":"What is 2 + 2? (` + strconv.Itoa(i) + `)"}],"max_tokens":512}`
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bench")
		req.Header.Set("Content-Type", "application/json")
		return loadtest.SendOK(client, req)
	}
}

// BenchmarkServeOverheadFloor measures, in BenchmarkServeOverhead's setting,
// the least that a gateway built the way Conclave is must add to a model
// call on this machine: the overhead floor under the goals. The floor
// (overheadFloor, this test binary in a process of its own) does per call
// only what the architecture makes every billed call do before and after
// the model: one statement to PostgreSQL committed asynchronously (as
// admit_call commits) before forwarding the request to the simulator, and
// one committed synchronously, waiting for the disk (a settlement is on
// disk before the answer), before answering. Nothing else: no authentication, policy,
// limits, money, receipt, request log or engine. The same durable throwaway
// cluster, pool size and open-loop sweep; the gap between its overhead and
// BenchmarkServeOverhead's is Conclave's own work.
//
// CONCLAVE_BENCH_OVERHEAD_WINDOW and CONCLAVE_BENCH_OVERHEAD_RATES apply.
func BenchmarkServeOverheadFloor(b *testing.B) { floorSweep(b, floorTrivial) }

// BenchmarkServeOverheadLeanRails is the floor with, in its two statements,
// the fewest rows that the spec's rails can be kept with in PostgreSQL
// alone (floorLeanRails): one row per call that is at once its idempotency
// claim, concurrency slot and hold, a per-minute counter per key, a balance
// row that also counts the calls in flight, one journal row per charge and
// one row per receipt, without CHECK constraints, triggers or foreign
// keys. No design that keeps those rails in PostgreSQL writes less per
// call, so its overhead bounds from below what any such gateway can reach
// on this machine; the gap between it and BenchmarkServeOverhead is what a
// leaner schema could win, and the gap between it and the floor is the
// cost of the rails' rows alone.
//
// CONCLAVE_BENCH_OVERHEAD_WINDOW and CONCLAVE_BENCH_OVERHEAD_RATES apply.
func BenchmarkServeOverheadLeanRails(b *testing.B) { floorSweep(b, floorLeanRails) }

// floorSweep runs the overhead sweep through a floor process of the given
// shape in front of a simulator, on a durable throwaway cluster.
func floorSweep(b *testing.B, shape string) {
	simURL := startSim(b, "--time-scale", "0.000001")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	dbURL := pgtest.NewDurableDatabase(b)
	cmd.Env = append(os.Environ(), "CONCLAVE_BENCH_FLOOR_DB="+dbURL, "CONCLAVE_BENCH_FLOOR_SIM="+simURL,
		"CONCLAVE_BENCH_FLOOR_SHAPE="+shape)
	floor := startProcess(b, cmd)
	pid := floor.cmd.Process.Pid

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}, Timeout: time.Minute}
	b.Cleanup(client.CloseIdleConnections)
	direct, gateway := simChat(client, simURL+simChatPath), simChat(client, floor.base+simChatPath)
	if err := gateway(-1); err != nil {
		b.Fatal("call through the floor: ", err)
	}
	processSweep(b, direct, gateway, pid, dbURL, "floor_cpu_ms/call")
}

// The shapes of a floor process: what it writes per call.
const (
	floorTrivial   = "trivial"
	floorLeanRails = "lean-rails"
)

// floorShape is a floor's schema and its two statements: admit before the
// model call (committed asynchronously, in the function it calls) and
// settle after it (committed synchronously), each given the call's id,
// and settle its answer too.
type floorShape struct {
	schema string
	admit  func(ctx context.Context, pool *pgxpool.Pool, id string) error
	settle func(ctx context.Context, pool *pgxpool.Pool, id string, answer []byte) error
}

var floorShapes = map[string]floorShape{
	floorTrivial: {
		schema: `
CREATE TABLE floor_calls (id text PRIMARY KEY, state text NOT NULL, answer bytea);
CREATE FUNCTION floor_admit(p_id text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO floor_calls (id, state) VALUES (p_id, 'held');
END $$;`,
		admit: func(ctx context.Context, pool *pgxpool.Pool, id string) error {
			_, err := pool.Exec(ctx, "SELECT floor_admit($1)", id)
			return err
		},
		settle: func(ctx context.Context, pool *pgxpool.Pool, id string, answer []byte) error {
			_, err := pool.Exec(ctx, "UPDATE floor_calls SET state = 'settled', answer = $2 WHERE id = $1", id, answer)
			return err
		},
	},
	floorLeanRails: {
		// The structures Conclave keeps the rails with, each in its fewest
		// rows: a rate row per key (unlogged, one upsert), a
		// leased slot row per call in flight, one idempotency claim per
		// call that also carries its hold and, once settled, its bill and
		// receipt, the balance row (held and balance, guarded by CHECK
		// constraints) reserved and settled by one conditional UPDATE each,
		// and a posting with two legs that sum to zero. The call's ceiling
		// is 2 USD; the limits are out of reach.
		schema: `
CREATE UNLOGGED TABLE lean_rates (key_id text PRIMARY KEY, window_start timestamptz NOT NULL, count int NOT NULL);
CREATE UNLOGGED TABLE lean_slots (org_id text NOT NULL, slot int NOT NULL, request_id text NOT NULL,
    lease_until timestamptz NOT NULL, PRIMARY KEY (org_id, slot));
CREATE UNIQUE INDEX lean_slots_request ON lean_slots (request_id);
CREATE TABLE lean_balances (org_id text PRIMARY KEY, balance bigint NOT NULL CHECK (balance >= 0),
    held bigint NOT NULL CHECK (held >= 0 AND held <= balance));
CREATE TABLE lean_claims (org_id text NOT NULL, key text NOT NULL, request_id text NOT NULL, state text NOT NULL,
    hold bigint NOT NULL, billed bigint, lease_until timestamptz NOT NULL, receipt jsonb,
    PRIMARY KEY (org_id, key));
CREATE INDEX lean_claims_in_flight ON lean_claims (lease_until) WHERE state = 'in_flight';
CREATE TABLE lean_postings (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, org_id text NOT NULL,
    memo text NOT NULL, at timestamptz NOT NULL DEFAULT now());
CREATE TABLE lean_legs (posting_id bigint NOT NULL, account text NOT NULL, amount bigint NOT NULL,
    PRIMARY KEY (posting_id, account));
INSERT INTO lean_balances VALUES ('org', 1000000000000000, 0);
CREATE FUNCTION lean_admit(p_key text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO lean_claims (org_id, key, request_id, state, hold, lease_until)
        VALUES ('org', p_key, p_key, 'in_flight', 2000000, now() + interval '30 seconds')
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RAISE EXCEPTION 'request in progress'; END IF;
    INSERT INTO lean_slots VALUES ('org', floor(random() * 2000000000)::int, p_key, now() + interval '30 seconds')
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RAISE EXCEPTION 'slot taken'; END IF;
    INSERT INTO lean_rates VALUES ('key', date_trunc('minute', now()), 1)
        ON CONFLICT (key_id) DO UPDATE SET
            count = CASE WHEN lean_rates.window_start = EXCLUDED.window_start THEN lean_rates.count + 1 ELSE 1 END,
            window_start = EXCLUDED.window_start
        RETURNING count INTO n;
    IF n > 1000000000 THEN RAISE EXCEPTION 'rate limit exceeded'; END IF;
    UPDATE lean_balances SET held = held + 2000000 WHERE org_id = 'org' AND balance - held >= 2000000;
    IF NOT FOUND THEN RAISE EXCEPTION 'insufficient balance'; END IF;
END $$;
CREATE FUNCTION lean_settle(p_key text, p_billed bigint, p_receipt jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE h bigint; p bigint;
BEGIN
    UPDATE lean_claims SET state = 'succeeded', billed = p_billed, receipt = p_receipt
        WHERE org_id = 'org' AND key = p_key AND state = 'in_flight'
        RETURNING hold INTO h;
    IF NOT FOUND THEN RAISE EXCEPTION 'not in flight'; END IF;
    DELETE FROM lean_slots WHERE org_id = 'org' AND request_id = p_key;
    INSERT INTO lean_postings (org_id, memo) VALUES ('org', 'call ' || p_key) RETURNING id INTO p;
    INSERT INTO lean_legs VALUES (p, 'org_balance', -p_billed), (p, 'revenue', p_billed);
    UPDATE lean_balances SET balance = balance - p_billed, held = held - h WHERE org_id = 'org';
END $$;`,
		admit: func(ctx context.Context, pool *pgxpool.Pool, id string) error {
			_, err := pool.Exec(ctx, "SELECT lean_admit($1)", id)
			return err
		},
		settle: func(ctx context.Context, pool *pgxpool.Pool, id string, answer []byte) error {
			// A receipt of the size of an express call's: its figures,
			// its one seat and the answer.
			body, err := json.Marshal(map[string]any{
				"request_id": id, "mode": overheadMode, "status": "completed", "lane": "express",
				"billed_usd": 0.000123, "prompt_tokens": 12, "completion_tokens": 8, "rounds": 0,
				"payer": "conclave", "latency_ms": 1, "response": json.RawMessage(answer),
				"seats": []map[string]any{{
					"role": "seat", "model_used": "sim/atlas", "tokens_in": 12, "tokens_out": 8,
					"source": "conclave", "real_cost_usd": 0.000023, "fee_usd": 0, "latency_ms": 1,
				}},
			})
			if err != nil {
				return err
			}
			_, err = pool.Exec(ctx, "SELECT lean_settle($1, $2, $3)", id, int64(123), body)
			return err
		},
	},
}

// overheadFloor serves a floor of the given shape (floorShapes) on a
// loopback port (printing it as conclave serve does) until it is killed:
// each POST is admitted in PostgreSQL at dbURL (20 connections, Conclave's
// default) with one asynchronous commit, forwarded to the simulator at
// simURL, and settled with its answer with one synchronous commit before it
// is returned. TestMain runs it instead of the tests when
// CONCLAVE_BENCH_FLOOR_DB is set.
func overheadFloor(dbURL, simURL, shapeName string) error {
	shape, ok := floorShapes[shapeName]
	if !ok {
		return fmt.Errorf("no floor shape %q", shapeName)
	}
	// The collector is paced as serve paces it (server.heap_floor_mib), so
	// that the gap to the gateway is its work, not a setting.
	builtin, err := config.Builtin()
	if err != nil {
		return err
	}
	defer heapfloor.Set(int64(builtin.Server.HeapFloorMiB) << 20)()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, shape.schema); err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}, Timeout: time.Minute}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println("Conclave is serving on http://" + ln.Addr().String())
	var calls atomic.Int64
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := strconv.FormatInt(calls.Add(1), 10)
		if err := shape.admit(r.Context(), pool, id); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), "POST", simURL+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			http.Error(w, fmt.Sprintf("the simulator answered %d: %v", res.StatusCode, err), http.StatusBadGateway)
			return
		}
		if err := shape.settle(r.Context(), pool, id, answer); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
}

// The benchmarks' configurations load, each with its one mode on the
// shared seats, so a broken YAML fails make test, not only make bench.
func TestBenchConfigsLoad(t *testing.T) {
	t.Parallel()
	for name, yaml := range map[string]string{
		overheadMode: overheadConfig("http://127.0.0.1:1"),
		inFlightMode: inFlightConfig("http://127.0.0.1:1", 900),
	} {
		path := filepath.Join(t.TempDir(), "conclave.yaml")
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
		cfg, err := config.Load(path)
		require.NoError(t, err, name)
		catalog, err := cfg.Catalog()
		require.NoError(t, err, name)
		mode, ok := catalog.Resolve(name)
		require.True(t, ok, name)
		require.Len(t, mode.Deliberation.Seats[core.TierPlus], 3, name)
	}
}

// The floors do what their benchmarks say they do: the trivial floor
// records each call and its answer; the lean rails reserve the ceiling,
// take a slot and a claim, refuse a second admission of the same call,
// and settle each call once, journaled in legs that sum to zero, with its
// receipt, giving back the slot and the rest of the hold.
func TestFloorShapesKeepTheirRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	answer := []byte(`{"id":"chatcmpl-1","choices":[{"message":{"role":"assistant","content":"4"}}]}`)
	for name, shape := range floorShapes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			_, err := pool.Exec(ctx, shape.schema)
			require.NoError(t, err)
			for _, id := range []string{"1", "2", "3"} {
				require.NoError(t, shape.admit(ctx, pool, id))
			}
			if name == floorLeanRails {
				require.ErrorContains(t, shape.admit(ctx, pool, "2"), "request in progress")
				var held, slots int64
				require.NoError(t, pool.QueryRow(ctx, "SELECT held, (SELECT count(*) FROM lean_slots) FROM lean_balances").Scan(&held, &slots))
				require.Equal(t, int64(3*2_000_000), held)
				require.Equal(t, int64(3), slots)
			}
			for _, id := range []string{"1", "2", "3"} {
				require.NoError(t, shape.settle(ctx, pool, id, answer))
			}
			switch name {
			case floorTrivial:
				var settled int
				require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM floor_calls WHERE state = 'settled' AND answer = $1", answer).Scan(&settled))
				require.Equal(t, 3, settled)
			case floorLeanRails:
				require.ErrorContains(t, shape.settle(ctx, pool, "2", answer), "not in flight")
				var balance, held, slots, legSum, legs, receipts int64
				require.NoError(t, pool.QueryRow(ctx, `SELECT balance, held, (SELECT count(*) FROM lean_slots),
  (SELECT sum(amount) FROM lean_legs), (SELECT count(*) FROM lean_legs),
  (SELECT count(*) FROM lean_claims WHERE state = 'succeeded' AND billed = 123 AND receipt->'response' = $1::jsonb)
  FROM lean_balances`, answer).Scan(&balance, &held, &slots, &legSum, &legs, &receipts))
				require.Equal(t, int64(1_000_000_000_000_000-3*123), balance)
				require.Zero(t, held)
				require.Zero(t, slots)
				require.Zero(t, legSum)
				require.Equal(t, int64(6), legs)
				require.Equal(t, int64(3), receipts)
			default:
				t.Fatalf("no assertions for the floor shape %q", name)
			}
		})
	}
}
