package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/jobs"
)

// startJobs starts the background jobs (trial expiry, hold sweep,
// idempotency reap; internal/jobs) on the open database: every replica runs
// them and River coordinates them through PostgreSQL. The returned func
// stops them, letting running jobs finish for up to jobs.stop_timeout.
func startJobs(ctx context.Context, cfg *config.Config, db *database, log *slog.Logger) (stop func(), err error) {
	j := cfg.Jobs
	r, err := jobs.New(db.pool, jobs.Config{
		TrialPeriod: j.TrialPeriod, TrialExpiryInterval: j.TrialExpiryInterval,
		SweepInterval: j.SweepInterval, HoldGrace: j.HoldGrace,
		ReapInterval: j.ReapInterval, IdempotencyRetention: j.IdempotencyRetention,
		StopTimeout: j.StopTimeout, Logger: log.With(slog.String("component", "jobs")),
	})
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		// Past the stop timeout River cancels the running jobs; the margin
		// lets them return.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.StopTimeout+5*time.Second)
		defer cancel()
		if err := r.Stop(sctx); err != nil {
			log.Warn("background jobs did not stop in time", slog.String("error", err.Error()))
		}
	}, nil
}
