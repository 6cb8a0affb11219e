package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/jobs"
)

// startJobs starts the background jobs (trial expiry, hold sweep,
// idempotency reap; internal/jobs) on the open database: every replica runs
// them and River coordinates them through PostgreSQL. The returned func
// stops them, letting running jobs finish for up to jobs.stop_timeout.
func startJobs(ctx context.Context, cfg *config.Config, db *database, questions jobs.QuestionRunner, log *slog.Logger) (stop func(), err error) {
	r, err := newJobs(cfg, db, questions, log.With(slog.String("component", "jobs")))
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		// Past the stop timeout River cancels the running jobs; the margin
		// lets them return.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Jobs.StopTimeout+5*time.Second)
		defer cancel()
		if err := r.Stop(sctx); err != nil {
			log.Warn("background jobs did not stop in time", slog.String("error", err.Error()))
		}
	}, nil
}

type sweepJSON struct {
	HoldsReleased     int          `json:"holds_released"`
	ReleasedUSD       core.Dollars `json:"released_usd"`
	SlotsFreed        int          `json:"slots_freed"`
	ClaimsFreed       int          `json:"claims_freed"`
	TrialsExpired     int          `json:"trials_expired"`
	TrialDeductedUSD  core.Dollars `json:"trial_deducted_usd"`
	TrialsDeferred    int          `json:"trials_deferred"`
	IdempotencyReaped int          `json:"idempotency_keys_reaped"`
}

// jobsSweep runs `conclave jobs sweep`: the background jobs' work once,
// now, with the configured settings — for an operator who will not wait for
// the next scheduled run.
func jobsSweep(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	return withDatabase(ctx, cf, func(cfg *config.Config, db *database) error {
		r, err := newJobs(cfg, db, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		return sweepNow(ctx, r, *cf.json, cio.stdout)
	})
}

// sweepNow runs r's sweeps once and reports what they did.
func sweepNow(ctx context.Context, r *jobs.Runner, asJSON bool, w io.Writer) error {
	rep, err := r.SweepNow(ctx)
	if err != nil {
		return err
	}
	out := sweepJSON{IdempotencyReaped: rep.KeysReaped}
	if h := rep.Holds; h != nil {
		out.HoldsReleased, out.ReleasedUSD, out.SlotsFreed, out.ClaimsFreed = h.HoldsReleased, core.Dollars(h.Released), h.SlotsFreed, h.ClaimsFreed
	}
	if t := rep.Trials; t != nil {
		out.TrialsExpired, out.TrialDeductedUSD, out.TrialsDeferred = t.Orgs, core.Dollars(t.Deducted), t.Deferred
	}
	return emit(w, asJSON, out, fmt.Sprintf("Released %d holds of dead calls ($%s), freed %d slots and %d claims; expired %d trials ($%s, %d deferred by live holds); reaped %d idempotency keys.",
		out.HoldsReleased, core.Micros(out.ReleasedUSD), out.SlotsFreed, out.ClaimsFreed, out.TrialsExpired, core.Micros(out.TrialDeductedUSD), out.TrialsDeferred, out.IdempotencyReaped))
}

// newJobs is the background jobs' runner with the configured settings;
// questions runs benchmark questions (nil: the runner works none).
func newJobs(cfg *config.Config, db *database, questions jobs.QuestionRunner, log *slog.Logger) (*jobs.Runner, error) {
	j := cfg.Jobs
	c := jobs.Config{
		TrialPeriod: j.TrialPeriod, TrialExpiryInterval: j.TrialExpiryInterval,
		SweepInterval: j.SweepInterval, HoldGrace: j.HoldGrace,
		ReapInterval: j.ReapInterval, IdempotencyRetention: j.IdempotencyRetention,
		SpendInterval: j.SpendInterval, SpendGrace: j.SpendGrace,
		StopTimeout: j.StopTimeout, BenchWorkers: j.BenchWorkers, BenchTimeout: j.BenchTimeout, Logger: log,
		RegisteredClientRetention: cfg.Auth.RegisteredClientRetention,
		GenieHistoryRetention:     cfg.Genie.HistoryRetention,
		AlertInterval:             cfg.Alerts.Interval, WebhookAttempts: cfg.Alerts.WebhookAttempts,
		WebhookTimeout: cfg.Alerts.WebhookTimeout, AllowLoopbackWebhooks: cfg.Alerts.AllowLoopbackWebhooks,
	}
	if questions != nil {
		c.Questions = questions
	}
	return jobs.New(db.pool, c)
}
