package deliberatetest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
)

// timeScale maps the simulator's time to real time in the tests: its quick
// profile answers in 0.5–6 ms, and a directed delay of 300 s takes 3 s.
const timeScale = 0.01

// shared is the simulated provider every test calls; started in TestMain.
var shared struct {
	catalog *core.Catalog
	prov    *providers.Providers
}

func TestMain(m *testing.M) {
	code := func() int {
		ctx := context.Background()
		cat, err := testCatalog()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		prov, err := startProviders(ctx, cat, sim.Config{TimeScale: timeScale})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		shared.catalog, shared.prov = cat, prov
		code := m.Run()
		prov.Stop(ctx)
		return code
	}()
	if code == 0 {
		// The engine's parked seat workers (at most 64) live as long as
		// the process, by design.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/conclavehq/conclave/core/deliberate.(*workers).work")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlived the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startProviders wires the catalog to an in-process simulator. Retries are
// off, so that a directed failure fails once and the seat's backup runs.
func startProviders(ctx context.Context, cat *core.Catalog, scfg sim.Config) (*providers.Providers, error) {
	return providers.Start(ctx, providers.Config{Catalog: cat, Simulator: scfg, Egress: egress.Config{MaxAttempts: 1}})
}

// Engines: three seats (s1–s3) with their backups (b1–b3), a judge and a
// synthesis engine with backups, and a classifier. Each has its own model id
// so that a targeted directive ([[sim@s2: …]]) hits exactly one role.
func testCatalog() (*core.Catalog, error) {
	eng := func(id, adapter string, in, out core.Micros) core.Engine {
		return core.Engine{ID: "sim/" + id, Family: "sim-" + adapter, MaxTier: core.TierPro, Adapter: adapter, Endpoint: providers.SimEndpoint, InputPerMTok: in, OutputPerMTok: out}
	}
	return core.NewCatalog([]core.Engine{
		eng("s1", "openai", 2_500_000, 10_000_000), eng("b1", "openai", 150_000, 600_000),
		eng("s2", "anthropic", 3_000_000, 15_000_000), eng("b2", "anthropic", 800_000, 4_000_000),
		eng("s3", "gemini", 300_000, 2_500_000), eng("b3", "gemini", 1_250_000, 10_000_000),
		eng("judge", "anthropic", 3_000_000, 15_000_000), eng("judgeb", "openai", 2_500_000, 10_000_000),
		eng("synth", "openai", 2_500_000, 10_000_000), eng("synthb", "anthropic", 3_000_000, 15_000_000),
		eng("clf", "openai", 150_000, 600_000),
	}, nil)
}

// testMode is a three-seat mode on the test engines: critique always, two
// rounds, wait for every seat, express lane under 0.2, no classifier engine.
func testMode(edit func(*core.Deliberation)) *core.Mode {
	d := core.Deliberation{
		Seats: map[core.Tier][]core.Seat{core.TierPlus: {
			{Engine: "sim/s1", Backup: "sim/b1"},
			{Engine: "sim/s2", Backup: "sim/b2"},
			{Engine: "sim/s3", Backup: "sim/b3"},
		}},
		Staff: map[string]core.Staff{
			"judge":     {Engine: "sim/judge", Backup: "sim/judgeb"},
			"synthesis": {Engine: "sim/synth", Backup: "sim/synthb"},
		},
		Critique:         core.CritiqueAlways,
		MaxRounds:        2,
		ExpressThreshold: 0.2,
	}
	if edit != nil {
		edit(&d)
	}
	return &core.Mode{Key: "test", ID: "conclave-test", Name: "Test", IncludesDeliberation: true, Deliberation: d}
}

// newEngine builds an engine on the shared provider.
func newEngine(t testing.TB, edit func(*deliberate.Config)) *deliberate.Engine {
	t.Helper()
	cfg := deliberate.Config{Catalog: shared.catalog, Caller: shared.prov, Judge: direct.New(), Seed: func() int64 { return 42 }}
	if edit != nil {
		edit(&cfg)
	}
	e, err := deliberate.New(cfg)
	require.NoError(t, err)
	return e
}

// request is a deliberation of one question on the mode, at the plus tier.
func request(mode *core.Mode, q string) *deliberate.Request {
	return &deliberate.Request{Mode: mode, Tier: core.TierPlus, OrgID: "org-test", RequestID: "req-test",
		Messages: []core.Message{{Role: core.RoleUser, Content: q}}}
}

// run deliberates one question on the mode.
func run(t testing.TB, e *deliberate.Engine, mode *core.Mode, q string) (*deliberate.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return e.Run(ctx, request(mode, q))
}

// plan plans one question on the mode.
func plan(t testing.TB, e *deliberate.Engine, mode *core.Mode, q string) *deliberate.Plan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := e.Plan(ctx, request(mode, q))
	require.NoError(t, err)
	return p
}
