package main

import (
	"log/slog"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/execute"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/jobs"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/plugins/protocol/pairwise"
	"github.com/conclavehq/conclave/plugins/protocol/plurality"
)

// benchParts are test runs and certification: the launch service REST and
// MCP call, and the executor every replica's jobs run questions with.
type benchParts struct {
	launch   *runs.Service
	executor *runs.Executor
}

// newBench wires test runs and certification on the open database: the
// batches and their question queue in PostgreSQL, the question bank, the
// mode's and the baseline's answers through the deliberation engine and the
// providers, the judges on their configured engines under the pairwise and
// plurality protocols (natively), and the statistics of core/bench.
func newBench(cfg *config.Config, catalog *core.Catalog, db *database, g *gateway, engine *deliberate.Engine,
	log *slog.Logger) (*benchParts, error) {
	queue, err := jobs.NewQuestionQueue(db.pool, cfg.Jobs.BenchAttempts)
	if err != nil {
		return nil, err
	}
	batches := pgstore.NewBatches(db.pool, queue)
	judges := map[runs.Judge]string{}
	for _, j := range cfg.Judges {
		judges[runs.Judge(j.Name)] = j.Engine
	}
	// A judge without an engine (judges: [] in the configuration) leaves
	// the server serving; launches that need it are refused, saying so.
	var missing []string
	for _, j := range runs.Judges {
		if _, ok := judges[j]; !ok {
			missing = append(missing, string(j))
		}
	}
	if len(missing) > 0 {
		log.Warn("test runs and certifications that need these judges are refused: the configuration names no engine for them",
			slog.Any("judges", missing))
	}
	health := execute.NewHealth(nil)
	launch, err := runs.NewService(runs.Config{
		TestLaunchesPerDay: cfg.Limits.TestLaunchesPerDay, CertifyLaunchesPerDay: cfg.Limits.CertifyLaunchesPerDay,
		Lease: cfg.Limits.Lease, ActivationAllowance: core.Micros(cfg.Limits.ActivationAllowanceUSD),
		Pace:           runs.Pace{Workers: cfg.Jobs.BenchWorkers, QuestionTime: cfg.Jobs.BenchQuestionTime},
		JudgingPerRead: judging(cfg, catalog, 1),
	}, runs.Deps{Access: g.acc, Modes: g.svc, Store: batches, Bank: execute.Bank{}, Catalog: catalog, Logger: log,
		JudgeWorking:    func(j runs.Judge) bool { return health.Working(judges[j]) },
		JudgeConfigured: func(j runs.Judge) bool { _, ok := judges[j]; return ok }})
	if err != nil {
		return nil, err
	}
	// A batch runs an organisation's mode version, or a configured mode a
	// key tested (version 0).
	versions := core.NewAuthoredModeSource(catalog, db.store)
	executor, err := runs.NewExecutor(runs.ExecutorDeps{
		Store:    batches,
		Mode:     &execute.ModeAnswerer{Versions: versions, Engine: engine},
		Baseline: &execute.BaselineAnswerer{Versions: versions, Catalog: catalog, Caller: g.prov},
		Panel: &execute.Panel{Catalog: catalog, Caller: g.prov, Engines: judges, Health: health, Protocols: map[runs.Protocol]core.Protocol{
			runs.ProtocolPairwise: pairwise.New(), runs.ProtocolPlurality: plurality.New(),
		}},
		Scorer:    &execute.Scorer{Catalog: catalog, Engines: judges},
		Certifier: db.store,
		Logger:    log.With(slog.String("component", "bench")),
		Telemetry: g.tel,
	})
	if err != nil {
		return nil, err
	}
	return &benchParts{launch: launch, executor: executor}, nil
}

// benchJudging is the reference cost of the judging one test question can
// buy on this deployment: every configured judge's engine reading it the
// most times a test run may ask (runs.MaxRepeats). The price floor of an
// organisation's mode pays it (modes.TestFloor).
func benchJudging(cfg *config.Config, catalog *core.Catalog) core.Micros {
	return judging(cfg, catalog, runs.MaxRepeats)
}

// judging is the reference cost of every configured judge's engine reading
// a test question repeats times. A judge whose engine the catalogue lacks
// counts nothing here (newBench refuses the launches that need it).
func judging(cfg *config.Config, catalog *core.Catalog, repeats int) core.Micros {
	var engines []*core.Engine
	for _, j := range cfg.Judges {
		if e, ok := catalog.Engine(j.Engine); ok {
			engines = append(engines, e)
		}
	}
	return modes.JudgingCost(engines, repeats)
}
