package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/telemetry"
	"github.com/conclavehq/conclave/internal/jobs"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/tokens"
	"github.com/conclavehq/conclave/policies"
)

// limits are the knobs tests set across the handler and its services.
type limits struct {
	MaxBodyBytes        int64
	KeyCacheTTL         time.Duration
	RPM, Concurrency    int
	Lease               time.Duration
	RetryAfter          time.Duration // concurrency and in-progress fallback
	ActivationAllowance core.Micros
	RepeatWait          time.Duration // a repeat's wait for its running call; negative: none
	// TestLaunches and CertifyLaunches are the daily launch limits (0:
	// runs' defaults).
	TestLaunches, CertifyLaunches int
	// RateLease and RateLeaseTTL are the access service's (0: its
	// defaults, 32 and 1s; a RateLease of 1 is off).
	RateLease    int
	RateLeaseTTL time.Duration
}

// parts are what a test serves from; serve wires them into the core
// services and the REST handler as cmd/conclave does.
type parts struct {
	store       *pgstore.Store
	admission   core.Admission   // defaults to store
	settlement  calls.Settlement // defaults to admission
	outcomes    core.Outcomes    // defaults to store
	authz       core.Authorizer
	catalog     *core.Catalog
	ready       func(context.Context) error // defaults to store.Ready
	logger      *slog.Logger
	registry    *prometheus.Registry
	deliberator calls.Deliberator
	limits      limits
	// available reports whether an engine can fill a seat now, for mode
	// validation; nil means every engine can.
	available func(engineID string) bool
	// withoutModes serves no mode authoring (api.Deps.Modes nil).
	withoutModes bool
	// launches stands between the run service and the batch store (a
	// test's faulty store); nil: the store itself.
	launches func(runs.LaunchStore) runs.LaunchStore
	// judgeWorking reports whether a judge's engine works now; nil: all do.
	judgeWorking func(runs.Judge) bool
	// judgeConfigured reports whether a judge has an engine; nil: all do.
	judgeConfigured func(runs.Judge) bool
	// uncontracted leaves the exchanges unchecked against the OpenAPI
	// document, which describes the whole API: for a handler that serves
	// less of it (withoutModes).
	uncontracted bool
	// telemetry traces the calls and requests; the zero value traces none.
	telemetry telemetry.Telemetry
}

// modePolicy is the embedded mode-spec policy, compiled once for every
// test: it is safe for concurrent use.
var modePolicy = sync.OnceValues(func() (*policies.ModeValidator, error) {
	return policies.NewModeValidator(context.Background(), policies.Config{})
})

// serve returns the handler, with its call service started and stopped
// when the test ends; in a test (not a benchmark) the handler checks every
// exchange against the OpenAPI document.
func (p *parts) serve(t testing.TB) (http.Handler, *calls.Service) {
	t.Helper()
	if p.admission == nil {
		p.admission = p.store
	}
	if p.outcomes == nil {
		p.outcomes = p.store
	}
	if p.ready == nil {
		p.ready = p.store.Ready
	}
	l := p.limits
	acc, err := access.New(access.Config{KeyCacheTTL: l.KeyCacheTTL, RPM: l.RPM, Concurrency: l.Concurrency,
		RateLease: l.RateLease, RateLeaseTTL: l.RateLeaseTTL}, p.store, p.authz, p.admission)
	require.NoError(t, err)
	svc, err := calls.New(calls.Config{Lease: l.Lease, ConcurrencyRetryAfter: l.RetryAfter, ActivationAllowance: l.ActivationAllowance,
		RepeatWait: l.RepeatWait}, calls.Deps{
		Access: acc, Admission: p.admission, Settlement: p.settlement, Receipts: p.store, Outcomes: p.outcomes,
		Catalog: p.catalog, Modes: core.NewAuthoredModeSource(p.catalog, p.store), Deliberator: p.deliberator,
		TokensOver: tokens.Over, Logger: p.logger, Telemetry: p.telemetry,
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(context.Background()))
	t.Cleanup(svc.Stop)
	var authoring *modes.Service
	if !p.withoutModes {
		policy, err := modePolicy()
		require.NoError(t, err)
		authoring, err = modes.NewService(modes.Deps{
			Access: acc, Store: p.store, Catalog: p.catalog, Policy: policy, Available: p.available, Logger: p.logger,
		})
		require.NoError(t, err)
	}
	queue, err := jobs.NewQuestionQueue(p.store.Pool(), 0)
	require.NoError(t, err)
	var launches runs.LaunchStore = pgstore.NewBatches(p.store.Pool(), queue)
	if p.launches != nil {
		launches = p.launches(launches)
	}
	benchRuns, err := runs.NewService(runs.Config{TestLaunchesPerDay: l.TestLaunches, CertifyLaunchesPerDay: l.CertifyLaunches,
		ActivationAllowance: l.ActivationAllowance, Pace: testPace}, runs.Deps{
		Access: acc, Modes: svc, Store: launches, Bank: testBank{}, Catalog: p.catalog, Logger: p.logger,
		JudgeWorking: p.judgeWorking, JudgeConfigured: p.judgeConfigured,
	})
	require.NoError(t, err)
	h, err := api.New(api.Config{MaxBodyBytes: l.MaxBodyBytes}, api.Deps{
		Access: acc, Calls: svc, Modes: authoring, Runs: benchRuns, Ready: p.ready, Logger: p.logger, Registry: p.registry,
		Telemetry: p.telemetry,
	})
	require.NoError(t, err)
	if _, bench := t.(*testing.B); !bench && !p.uncontracted {
		// Every test's exchanges are held to the OpenAPI document
		// (contract_test.go). Benchmarks measure the handler alone.
		h = checkContract(t, h)
	}
	return h, svc
}
