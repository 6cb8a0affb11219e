package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
)

// OAuthSweepArgs is the oauth sweep: the embedded authorization server's
// leftovers deleted — apps that registered themselves and went unused
// past Config.RegisteredClientRetention, sign-in requests that expired,
// refresh tokens that expired.
type OAuthSweepArgs struct{}

// Kind implements river.JobArgs.
func (OAuthSweepArgs) Kind() string { return "oauth_sweep" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (OAuthSweepArgs) InsertOpts() river.InsertOpts { return maintenanceOpts() }

type oauthSweepWorker struct {
	river.WorkerDefaults[OAuthSweepArgs]
	r *Runner
}

func (w *oauthSweepWorker) Timeout(*river.Job[OAuthSweepArgs]) time.Duration { return jobTimeout }

func (w *oauthSweepWorker) Work(ctx context.Context, _ *river.Job[OAuthSweepArgs]) error {
	res, err := w.r.SweepOAuth(ctx, time.Now())
	if err != nil {
		return err
	}
	if res.Clients > 0 || res.AuthRequests > 0 || res.RefreshTokens > 0 {
		w.r.cfg.Logger.Info("swept the authorization server", slog.Int("unused_clients", res.Clients),
			slog.Int("expired_auth_requests", res.AuthRequests), slog.Int("expired_refresh_tokens", res.RefreshTokens))
	}
	return nil
}

// OAuthSweep is what one oauth sweep deleted.
type OAuthSweep struct {
	Clients, AuthRequests, RefreshTokens int
}

// SweepOAuth runs the oauth sweep once, now, in this process, as of at:
// each deletion is idempotent, so a run beside the periodic job does no
// harm.
func (r *Runner) SweepOAuth(ctx context.Context, at time.Time) (*OAuthSweep, error) {
	res := &OAuthSweep{}
	var err error
	if res.Clients, err = r.store.DeleteUnusedClients(ctx, at.Add(-r.cfg.RegisteredClientRetention)); err != nil {
		return res, err
	}
	if res.AuthRequests, err = r.store.DeleteExpiredAuthRequests(ctx, at); err != nil {
		return res, err
	}
	if res.RefreshTokens, err = r.store.DeleteExpiredRefreshTokens(ctx, at); err != nil {
		return res, err
	}
	return res, nil
}

var _ river.Worker[OAuthSweepArgs] = (*oauthSweepWorker)(nil)
