package jobs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/alerts"
	"github.com/conclavehq/conclave/core/publicnet"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// The alert jobs (core/alerts): the periodic alert check compares each
// organisation with alerts against its thresholds and records each
// crossing once per month, inserting its webhook delivery in the same
// transaction; a delivery job posts one crossing, retried with River's
// back-off (attempt⁴ seconds: 1s, 16s, 81s, …) up to Config.WebhookAttempts
// times. Neither touches a billed call.

// WebhookQueue is the River queue of webhook deliveries, apart from the
// maintenance jobs so that a slow receiver delays none of them.
const WebhookQueue = "webhooks"

// AlertCheckArgs is the periodic alert check.
type AlertCheckArgs struct{}

// Kind implements river.JobArgs.
func (AlertCheckArgs) Kind() string { return "alert_check" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (AlertCheckArgs) InsertOpts() river.InsertOpts { return maintenanceOpts() }

type alertCheckWorker struct {
	river.WorkerDefaults[AlertCheckArgs]
	r *Runner
}

func (w *alertCheckWorker) Timeout(*river.Job[AlertCheckArgs]) time.Duration { return jobTimeout }

func (w *alertCheckWorker) Work(ctx context.Context, _ *river.Job[AlertCheckArgs]) error {
	n, err := w.r.CheckAlerts(ctx, time.Now())
	if n > 0 {
		w.r.cfg.Logger.Info("spend alerts crossed", slog.Int("crossings", n))
	}
	return err
}

// CheckAlerts runs the alert check once, now, in this process, as of at:
// it records every threshold crossed that was not recorded this month and
// returns how many it recorded. Running it beside the periodic job does
// no harm: a crossing is recorded once whoever records it.
func (r *Runner) CheckAlerts(ctx context.Context, at time.Time) (int, error) {
	obs, err := r.store.AlertObservations(ctx, core.MonthStart(at))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range obs {
		for _, c := range alerts.Crossed(o, at) {
			isNew, err := r.store.RecordAlertCrossing(ctx, c, o.WebhookURL != "", r)
			if err != nil {
				return n, err
			}
			if isNew {
				n++
			}
		}
	}
	return n, nil
}

// EnqueueAlert implements pgstore.AlertQueue: the crossing's delivery job,
// in the transaction that records it.
func (r *Runner) EnqueueAlert(ctx context.Context, tx pgx.Tx, eventID string) error {
	_, err := r.client.InsertTx(ctx, tx, AlertDeliveryArgs{EventID: eventID},
		&river.InsertOpts{Queue: WebhookQueue, MaxAttempts: r.cfg.WebhookAttempts})
	return err
}

// AlertDeliveryArgs is one crossing's webhook post.
type AlertDeliveryArgs struct {
	EventID string `json:"event_id"`
}

// Kind implements river.JobArgs.
func (AlertDeliveryArgs) Kind() string { return "alert_webhook" }

type alertDeliveryWorker struct {
	river.WorkerDefaults[AlertDeliveryArgs]
	r      *Runner
	client *http.Client
}

func newAlertDeliveryWorker(r *Runner) *alertDeliveryWorker {
	d := &publicnet.Dialer{}
	if r.cfg.AllowLoopbackWebhooks {
		d.Allow = func(ip netip.Addr) bool { return ip.IsLoopback() }
	}
	tr := &http.Transport{
		DialContext:           d.DialContext,
		Proxy:                 nil, // a proxy would resolve names the guard never saw
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   r.cfg.WebhookTimeout,
		ResponseHeaderTimeout: r.cfg.WebhookTimeout,
	}
	return &alertDeliveryWorker{r: r, client: &http.Client{
		Transport:     tr,
		Timeout:       r.cfg.WebhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (w *alertDeliveryWorker) Timeout(*river.Job[AlertDeliveryArgs]) time.Duration {
	return w.r.cfg.WebhookTimeout + 5*time.Second
}

func (w *alertDeliveryWorker) Work(ctx context.Context, job *river.Job[AlertDeliveryArgs]) error {
	c, url, secret, err := w.r.store.AlertDelivery(ctx, job.Args.EventID)
	if err != nil {
		return err
	}
	if url == "" || c.Delivered != nil {
		return nil // the webhook was removed, or another attempt got through
	}
	body := alerts.EventOf(c).Body()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return river.JobCancel(fmt.Errorf("alert webhook: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Conclave-Webhooks/1")
	req.Header.Set(alerts.EventIDHeader, c.ID)
	req.Header.Set(alerts.SignatureHeader, alerts.Sign(secret, time.Now(), body))
	res, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("alert webhook %s: %w", c.ID, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("alert webhook %s: the receiver answered %s", c.ID, res.Status)
	}
	return w.r.store.MarkAlertDelivered(ctx, c.ID)
}

var (
	_ river.Worker[AlertCheckArgs]    = (*alertCheckWorker)(nil)
	_ river.Worker[AlertDeliveryArgs] = (*alertDeliveryWorker)(nil)
	_ pgstore.AlertQueue              = (*Runner)(nil)
)
