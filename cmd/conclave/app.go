package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/telemetry"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/tokens"
)

// callStore is what the call services keep their state in: the store of
// record and organisations' modes (*pgstore.Store is both).
type callStore interface {
	core.Store
	core.ModeStore
}

// newCallServices wires the core services every carrier calls: access
// (keys, policy, rates) and the billed call, on the store of record, with
// the configured modes and organisations' released ones.
func newCallServices(cfg *config.Config, catalog *core.Catalog, authz core.Authorizer, store callStore,
	engine calls.Deliberator, log *slog.Logger, tel telemetry.Telemetry) (*access.Service, *calls.Service, error) {
	tokens.Load() // the vocabulary, now rather than on the first request
	acc, err := access.New(access.Config{KeyCacheTTL: cfg.Auth.KeyCacheTTL, RPM: cfg.Limits.RPM, Concurrency: cfg.Limits.Concurrency,
		PersonRPM: cfg.People.PersonRPM, Plans: cfg.PlansByName(), RateLease: cfg.Limits.RateLease, RateLeaseTTL: cfg.Limits.RateLeaseTTL},
		store, authz, store)
	if err != nil {
		return nil, nil, err
	}
	svc, err := calls.New(calls.Config{
		MaxInputTokens:        cfg.Limits.MaxInputTokens,
		CallCeilingFloor:      core.Micros(cfg.Limits.CallCeilingUSD),
		Lease:                 cfg.Limits.Lease,
		ConcurrencyRetryAfter: cfg.Limits.ConcurrencyRetryAfter,
		ActivationAllowance:   core.Micros(cfg.Limits.ActivationAllowanceUSD),
		DeliberationTimeout:   cfg.Limits.DeliberationTimeout,
		RepeatWait:            repeatWait(cfg.Limits.RepeatWait),
	}, calls.Deps{
		Access: acc, Admission: store, Receipts: store, Outcomes: store,
		Catalog: catalog, Modes: core.NewAuthoredModeSource(catalog, store), Deliberator: engine,
		TokensOver: tokens.Over, Logger: log, Telemetry: tel,
	})
	if err != nil {
		return nil, nil, err
	}
	return acc, svc, nil
}

// drain stops a server told to stop: the call service refuses new calls at
// once, the public listener closes, and both wait, up to
// server.shutdown_timeout, for what runs — a deliberation whose caller left
// still finishes, bills and stores its answer. Past the deadline the rest
// are stopped unbilled. The operator listener (nil when off) closes last,
// so that the drain can be watched on its metrics.
func drain(ctx context.Context, cfg *config.Config, log *slog.Logger, public, operator *listener,
	svc *calls.Service) error {
	log.Info("shutting down: no new calls; draining running deliberations", slog.Duration("deadline", cfg.Server.ShutdownTimeout),
		slog.Int("deliberations", svc.Running()))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Server.ShutdownTimeout)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- svc.Drain(sctx) }()
	if err := public.srv.Shutdown(sctx); err != nil {
		log.Warn("drain deadline passed; closing remaining connections", slog.String("error", err.Error()))
		_ = public.srv.Close()
	}
	if err := <-drained; err != nil {
		log.Warn("drain deadline passed; stopping the deliberations still running, unbilled", slog.Int("deliberations", svc.Running()))
	}
	svc.Stop()
	err := serveResult(<-public.errc)
	if operator != nil {
		// Scrapes and probes are short; past the deadline they are cut.
		if operator.srv.Shutdown(sctx) != nil {
			_ = operator.srv.Close()
		}
		err = errors.Join(err, serveResult(<-operator.errc))
	}
	return err
}

// serveResult is the error of a Serve that returned, nil when it returned
// because the server was shut down.
func serveResult(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// repeatWait is the configured wait as the call service reads it, where 0
// means its default and a negative wait means none.
func repeatWait(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
