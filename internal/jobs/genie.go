package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
)

// GenieHistoryReapArgs is the assistant's history reap: the turns of its
// conversations older than Config.GenieHistoryRetention deleted
// (genie.history_retention). It runs whether or not the deployment keeps
// chat history now, so that turns kept before it was switched off still
// go.
type GenieHistoryReapArgs struct{}

// Kind implements river.JobArgs.
func (GenieHistoryReapArgs) Kind() string { return "genie_history_reap" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (GenieHistoryReapArgs) InsertOpts() river.InsertOpts { return maintenanceOpts() }

type genieHistoryReapWorker struct {
	river.WorkerDefaults[GenieHistoryReapArgs]
	r *Runner
}

func (w *genieHistoryReapWorker) Timeout(*river.Job[GenieHistoryReapArgs]) time.Duration {
	return jobTimeout
}

func (w *genieHistoryReapWorker) Work(ctx context.Context, _ *river.Job[GenieHistoryReapArgs]) error {
	n, err := w.r.ReapGenieHistory(ctx, time.Now())
	if err != nil {
		return err
	}
	if n > 0 {
		w.r.cfg.Logger.Info("reaped the assistant's history", slog.Int64("turns", n))
	}
	return nil
}

// ReapGenieHistory deletes, as of at, the assistant's turns older than the
// retention, and says how many; idempotent, so a run beside the periodic
// job does no harm.
func (r *Runner) ReapGenieHistory(ctx context.Context, at time.Time) (int64, error) {
	return r.store.ReapHistory(ctx, at.Add(-r.cfg.GenieHistoryRetention))
}

var _ river.Worker[GenieHistoryReapArgs] = (*genieHistoryReapWorker)(nil)
