package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// Queue is the River queue the maintenance jobs run on.
const Queue = "maintenance"

// Config configures a Runner. The zero value of a field means its default.
type Config struct {
	// TrialPeriod is how long after its organisation's creation trial credit
	// expires. Defaults to core.TrialPeriod (30 days).
	TrialPeriod time.Duration
	// TrialExpiryInterval is how often trial expiry runs. Defaults to 5m.
	TrialExpiryInterval time.Duration
	// SweepInterval is how often the hold sweeper runs. Defaults to 30s.
	SweepInterval time.Duration
	// HoldGrace is how long past its expiry a hold (or a slot's or claim's
	// lease) must be before the sweeper takes it: room for a live call's
	// renewal running late. Defaults to 0, no grace (the deployment
	// configuration, jobs.hold_grace, sets 30s).
	HoldGrace time.Duration
	// ReapInterval is how often the idempotency reaper runs. Defaults to 1h.
	ReapInterval time.Duration
	// SpendInterval is how often the spend job adds the journal's new
	// postings to the daily spend sums the dashboard reads. Defaults to
	// 15s.
	SpendInterval time.Duration
	// SpendGrace is how long the spend job waits on a gap in the posting
	// ids before it takes the gap for a rolled-back transaction
	// (pgstore.AggregateSpend). Defaults to 30s.
	SpendGrace time.Duration
	// IdempotencyRetention is how long a finished idempotency claim is kept
	// (a retry with its key replays within it). Defaults to 24h.
	IdempotencyRetention time.Duration
	// OAuthSweepInterval is how often the oauth sweep (oauth.go) runs.
	// Defaults to 1h.
	OAuthSweepInterval time.Duration
	// RegisteredClientRetention is how long an app that registered itself
	// is kept unused before the oauth sweep deletes it. Defaults to 720h.
	RegisteredClientRetention time.Duration
	// GenieHistoryInterval is how often the assistant's history reap
	// (genie.go) runs. Defaults to 1h.
	GenieHistoryInterval time.Duration
	// GenieHistoryRetention is how long a turn of the assistant's
	// conversations is kept. Defaults to 720h.
	GenieHistoryRetention time.Duration
	// AlertInterval is how often the alert check (alerts.go) compares
	// organisations' spend and balance with their thresholds. Defaults to
	// 1m.
	AlertInterval time.Duration
	// WebhookAttempts is how many times an alert's webhook post is tried
	// before it is given up. Defaults to 8 (River's back-off spreads
	// them over about 80 minutes).
	WebhookAttempts int
	// WebhookTimeout bounds one webhook post, connection included.
	// Defaults to 10s.
	WebhookTimeout time.Duration
	// AllowLoopbackWebhooks lets webhook posts reach loopback addresses.
	// For tests only: production leaves it false, and every post goes to
	// public addresses alone. Defaults to false.
	AllowLoopbackWebhooks bool
	// StopTimeout is how long Stop lets running jobs finish before
	// cancelling them. Defaults to 10s.
	StopTimeout time.Duration
	// MaxWorkers is how many jobs of the maintenance queue one replica works
	// at once. Defaults to 2.
	MaxWorkers int
	// Questions runs benchmark questions (bench.go) on BenchQueue. Defaults
	// to nil: the replica works no benchmark questions. Every replica of a
	// deployment that launches batches must set it: River's leader rescues
	// stuck jobs only of the kinds its replica knows, and discards others.
	Questions QuestionRunner
	// BenchWorkers is how many benchmark questions one replica works at
	// once, when Questions is set. Defaults to 32.
	BenchWorkers int
	// BenchTimeout bounds one run of a benchmark question's job (two
	// answers and every judgment); a run past it is cancelled and retried.
	// Defaults to 15m.
	BenchTimeout time.Duration
	// Logger receives River's and the jobs' logs. Defaults to discarding
	// them.
	Logger *slog.Logger

	// testOnly starts River without its production start-up jitter.
	testOnly bool
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&c.TrialPeriod, core.TrialPeriod)
	set(&c.TrialExpiryInterval, 5*time.Minute)
	set(&c.SweepInterval, 30*time.Second)
	set(&c.ReapInterval, time.Hour)
	set(&c.SpendInterval, 15*time.Second)
	set(&c.SpendGrace, 30*time.Second)
	set(&c.IdempotencyRetention, 24*time.Hour)
	set(&c.OAuthSweepInterval, time.Hour)
	set(&c.RegisteredClientRetention, 720*time.Hour)
	set(&c.GenieHistoryInterval, time.Hour)
	set(&c.GenieHistoryRetention, 720*time.Hour)
	set(&c.StopTimeout, 10*time.Second)
	set(&c.AlertInterval, time.Minute)
	set(&c.WebhookTimeout, 10*time.Second)
	if c.WebhookAttempts == 0 {
		c.WebhookAttempts = 8
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = 2
	}
	if c.BenchWorkers == 0 {
		c.BenchWorkers = 32
	}
	set(&c.BenchTimeout, 15*time.Minute)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c *Config) validate() error {
	switch {
	case c.TrialPeriod <= 0:
		return errors.New("jobs: TrialPeriod must be positive")
	case c.TrialExpiryInterval < time.Second:
		return errors.New("jobs: TrialExpiryInterval must be at least 1s")
	case c.SweepInterval < time.Second:
		return errors.New("jobs: SweepInterval must be at least 1s")
	case c.HoldGrace < 0:
		return errors.New("jobs: HoldGrace cannot be negative")
	case c.ReapInterval < time.Second:
		return errors.New("jobs: ReapInterval must be at least 1s")
	case c.SpendInterval < time.Second:
		return errors.New("jobs: SpendInterval must be at least 1s")
	case c.SpendGrace < time.Second:
		return errors.New("jobs: SpendGrace must be at least 1s")
	case c.IdempotencyRetention <= 0:
		return errors.New("jobs: IdempotencyRetention must be positive")
	case c.OAuthSweepInterval < time.Second:
		return errors.New("jobs: OAuthSweepInterval must be at least 1s")
	case c.RegisteredClientRetention <= 0:
		return errors.New("jobs: RegisteredClientRetention must be positive")
	case c.GenieHistoryInterval < time.Second:
		return errors.New("jobs: GenieHistoryInterval must be at least 1s")
	case c.GenieHistoryRetention <= 0:
		return errors.New("jobs: GenieHistoryRetention must be positive")
	case c.StopTimeout <= 0:
		return errors.New("jobs: StopTimeout must be positive")
	case c.AlertInterval < time.Second:
		return errors.New("jobs: AlertInterval must be at least 1s")
	case c.WebhookAttempts < 1 || c.WebhookAttempts > 25:
		return errors.New("jobs: WebhookAttempts must be 1 to 25")
	case c.WebhookTimeout < time.Second:
		return errors.New("jobs: WebhookTimeout must be at least 1s")
	case c.MaxWorkers < 1:
		return errors.New("jobs: MaxWorkers must be at least 1")
	case c.BenchWorkers < 1:
		return errors.New("jobs: BenchWorkers must be at least 1")
	case c.BenchTimeout < time.Second:
		return errors.New("jobs: BenchTimeout must be at least 1s")
	}
	return nil
}

// Runner runs the periodic maintenance jobs on a River client. Start it on
// every replica; Stop it on shutdown. Its methods are safe for concurrent
// use; Stop is safe to call twice, and before Start.
type Runner struct {
	pool   *pgxpool.Pool
	store  *pgstore.Store
	cfg    Config
	client *river.Client[pgx.Tx]

	mu      sync.Mutex
	started bool
}

// New builds a Runner over pool. It does not touch the database until
// Start.
func New(pool *pgxpool.Pool, cfg Config) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Runner{pool: pool, store: pgstore.New(pool), cfg: cfg}

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &trialExpiryWorker{r: r}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &holdSweepWorker{r: r}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &idempotencyReapWorker{r: r}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &spendWorker{r: r}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &oauthSweepWorker{r: r}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &genieHistoryReapWorker{r: r}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &alertCheckWorker{r: r}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, newAlertDeliveryWorker(r)); err != nil {
		return nil, err
	}
	queues := map[string]river.QueueConfig{Queue: {MaxWorkers: cfg.MaxWorkers}, WebhookQueue: {MaxWorkers: 4}}
	if cfg.Questions != nil {
		if err := river.AddWorkerSafely(workers, &benchQuestionWorker{runner: cfg.Questions, timeout: cfg.BenchTimeout}); err != nil {
			return nil, err
		}
		queues[BenchQueue] = river.QueueConfig{MaxWorkers: cfg.BenchWorkers}
	}
	periodic := func(every time.Duration, args river.JobArgs) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(every),
			func() (river.JobArgs, *river.InsertOpts) { return args, periodicOpts(every) },
			&river.PeriodicJobOpts{ID: args.Kind(), RunOnStart: true})
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:          cfg.Logger,
		Queues:          queues,
		Workers:         workers,
		SoftStopTimeout: cfg.StopTimeout,
		// A run left 'running' by a replica that died is retried this long
		// after it started (rescueAfter).
		JobTimeout:           min(jobTimeout, cfg.BenchTimeout),
		RescueStuckJobsAfter: rescueAfter(cfg),
		PeriodicJobs: []*river.PeriodicJob{
			periodic(cfg.TrialExpiryInterval, TrialExpiryArgs{}),
			periodic(cfg.SweepInterval, HoldSweepArgs{}),
			periodic(cfg.ReapInterval, IdempotencyReapArgs{}),
			periodic(cfg.SpendInterval, SpendArgs{}),
			periodic(cfg.OAuthSweepInterval, OAuthSweepArgs{}),
			periodic(cfg.AlertInterval, AlertCheckArgs{}),
			periodic(cfg.GenieHistoryInterval, GenieHistoryReapArgs{}),
		},
		TestOnly: cfg.testOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: creating the River client: %w", err)
	}
	r.client = client
	return r, nil
}

// Start migrates River's schema (idempotent; replicas serialise on an
// advisory lock) and starts working jobs. The jobs keep running after ctx
// ends; Stop stops them.
func (r *Runner) Start(ctx context.Context) error {
	if err := pgstore.MigrateRiver(ctx, r.pool); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("jobs: starting the River client: %w", err)
	}
	r.started = true
	return nil
}

// Stop stops fetching jobs and waits for running ones to finish, for up to
// Config.StopTimeout; then their contexts are cancelled and Stop waits for
// them to return, at most until ctx ends. A job cut short is retried by
// River (here or on another replica). Stop is safe to call twice.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		return nil
	}
	if err := r.client.Stop(ctx); err != nil {
		return fmt.Errorf("jobs: stopping: %w", err)
	}
	r.started = false
	return nil
}

// Client is the River client, for inserting jobs in tests and for other
// job kinds registered later.
func (r *Runner) Client() *river.Client[pgx.Tx] { return r.client }

// Report is what one SweepNow did.
type Report struct {
	Trials     *pgstore.ExpireTrialsResult
	Holds      *pgstore.SweepResult
	KeysReaped int
}

// SweepNow runs the three jobs' work once, now, in this process, with the
// Runner's configuration (hold grace included): trial expiry, the hold
// sweep, the idempotency reap. It needs no Start.
func (r *Runner) SweepNow(ctx context.Context) (*Report, error) {
	rep := &Report{}
	var err error
	if rep.Holds, err = r.sweepHolds(ctx); err != nil {
		return rep, err
	}
	if rep.Trials, err = r.expireTrials(ctx); err != nil {
		return rep, err
	}
	if rep.KeysReaped, err = r.reap(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}

// The sweep runs before trial expiry in SweepNow: money freed from dead
// calls' holds is then deducted in the same pass.

func (r *Runner) sweepHolds(ctx context.Context) (*pgstore.SweepResult, error) {
	return r.store.SweepHolds(ctx, &pgstore.SweepParams{Grace: r.cfg.HoldGrace})
}

func (r *Runner) expireTrials(ctx context.Context) (*pgstore.ExpireTrialsResult, error) {
	return r.store.ExpireTrials(ctx, &pgstore.ExpireTrialsParams{Period: r.cfg.TrialPeriod})
}

func (r *Runner) reap(ctx context.Context) (int, error) {
	return r.store.ReapIdempotencyKeys(ctx, &pgstore.ReapParams{Retention: r.cfg.IdempotencyRetention})
}

// periodicOpts are the insert options of a periodic run: unique within its
// period only. Uniqueness across periods would let one run left 'running'
// by a replica that died block every later run until River rescues it —
// and the hold sweeper exists for exactly that replica's calls.
func periodicOpts(every time.Duration) *river.InsertOpts {
	return &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: max(every, time.Second)}}
}

// maintenanceOpts puts a job on the maintenance queue. The periodic inserts
// add uniqueness within their period (see New).
func maintenanceOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 5}
}

// rescueAfter is how long after it started a job still marked running is
// taken for the run of a replica that died, and retried: past the timeout
// of a question's run (when the replica works questions), so that a live
// question is never run twice at once, plus a margin for the cancelled run
// to return — half the timeout, at most a minute. It used to be the
// maintenance jobs' timeout plus a minute, three minutes, whatever
// BenchTimeout was: a question running longer was run again beside itself,
// and a short BenchTimeout did not bring a dead replica's questions back
// any sooner. A maintenance job may then be retried before its own timeout
// ends; its work is idempotent (each run commits what it did, and the next
// takes the rest), so a second run beside a live one changes nothing.
func rescueAfter(c Config) time.Duration {
	base := jobTimeout
	if c.Questions != nil {
		base = c.BenchTimeout
	}
	return base + min(base/2, time.Minute)
}

// jobTimeout bounds one run of a maintenance job; work done before it is
// committed, and the next run takes the rest.
const jobTimeout = 2 * time.Minute

// TrialExpiryArgs is the trial-expiry job.
type TrialExpiryArgs struct{}

// Kind implements river.JobArgs.
func (TrialExpiryArgs) Kind() string { return "trial_expiry" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (TrialExpiryArgs) InsertOpts() river.InsertOpts { return maintenanceOpts() }

type trialExpiryWorker struct {
	river.WorkerDefaults[TrialExpiryArgs]
	r *Runner
}

func (w *trialExpiryWorker) Timeout(*river.Job[TrialExpiryArgs]) time.Duration { return jobTimeout }

func (w *trialExpiryWorker) Work(ctx context.Context, _ *river.Job[TrialExpiryArgs]) error {
	res, err := w.r.expireTrials(ctx)
	if err != nil {
		return err
	}
	if res.Orgs > 0 || res.Deferred > 0 {
		w.r.cfg.Logger.Info("trial credit expired", slog.Int("orgs", res.Orgs),
			slog.String("deducted_usd", res.Deducted.String()), slog.Int("deferred_by_holds", res.Deferred))
	}
	return nil
}

// HoldSweepArgs is the hold-sweep job.
type HoldSweepArgs struct{}

// Kind implements river.JobArgs.
func (HoldSweepArgs) Kind() string { return "hold_sweep" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (HoldSweepArgs) InsertOpts() river.InsertOpts { return maintenanceOpts() }

type holdSweepWorker struct {
	river.WorkerDefaults[HoldSweepArgs]
	r *Runner
}

func (w *holdSweepWorker) Timeout(*river.Job[HoldSweepArgs]) time.Duration { return jobTimeout }

func (w *holdSweepWorker) Work(ctx context.Context, _ *river.Job[HoldSweepArgs]) error {
	res, err := w.r.sweepHolds(ctx)
	if err != nil {
		return err
	}
	if res.HoldsReleased > 0 || res.SlotsFreed > 0 || res.ClaimsFreed > 0 {
		w.r.cfg.Logger.Info("swept abandoned calls", slog.Int("holds_released", res.HoldsReleased),
			slog.String("released_usd", res.Released.String()), slog.Int("slots_freed", res.SlotsFreed),
			slog.Int("claims_freed", res.ClaimsFreed))
	}
	// Benchmark questions whose job died on its last attempt are given up
	// here, so that their batches still finish.
	if w.r.cfg.Questions != nil {
		n, err := SweepQuestions(ctx, w.r.pool, w.r.cfg.Questions)
		if n > 0 {
			w.r.cfg.Logger.Info("gave up benchmark questions whose job died", slog.Int("questions", n))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// IdempotencyReapArgs is the idempotency-reap job.
type IdempotencyReapArgs struct{}

// Kind implements river.JobArgs.
func (IdempotencyReapArgs) Kind() string { return "idempotency_reap" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (IdempotencyReapArgs) InsertOpts() river.InsertOpts { return maintenanceOpts() }

type idempotencyReapWorker struct {
	river.WorkerDefaults[IdempotencyReapArgs]
	r *Runner
}

func (w *idempotencyReapWorker) Timeout(*river.Job[IdempotencyReapArgs]) time.Duration {
	return jobTimeout
}

func (w *idempotencyReapWorker) Work(ctx context.Context, _ *river.Job[IdempotencyReapArgs]) error {
	n, err := w.r.reap(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		w.r.cfg.Logger.Info("reaped idempotency keys", slog.Int("deleted", n))
	}
	return nil
}

// SpendArgs is the spend job: the journal's new postings added to the
// daily spend sums.
type SpendArgs struct{}

// Kind implements river.JobArgs.
func (SpendArgs) Kind() string { return "daily_spend" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (SpendArgs) InsertOpts() river.InsertOpts { return maintenanceOpts() }

type spendWorker struct {
	river.WorkerDefaults[SpendArgs]
	r *Runner
}

func (w *spendWorker) Timeout(*river.Job[SpendArgs]) time.Duration { return jobTimeout }

// spendBatch is how many postings one transaction of the spend job reads.
const spendBatch = 5000

func (w *spendWorker) Work(ctx context.Context, _ *river.Job[SpendArgs]) error {
	_, err := w.r.AggregateSpend(ctx)
	return err
}

// AggregateSpend adds every posting the journal has past the spend job's
// cursor to the daily sums, a batch per transaction, until it is caught up
// or waits on a gap; it returns how many postings it took.
func (r *Runner) AggregateSpend(ctx context.Context) (int, error) {
	total := 0
	for {
		res, err := r.store.AggregateSpend(ctx, r.cfg.SpendGrace, spendBatch)
		if err != nil {
			return total, err
		}
		total += res.Postings
		if res.Postings < spendBatch || res.Waiting || ctx.Err() != nil {
			return total, nil
		}
	}
}

var (
	_ river.Worker[SpendArgs]           = (*spendWorker)(nil)
	_ river.Worker[TrialExpiryArgs]     = (*trialExpiryWorker)(nil)
	_ river.Worker[HoldSweepArgs]       = (*holdSweepWorker)(nil)
	_ river.Worker[IdempotencyReapArgs] = (*idempotencyReapWorker)(nil)
)
