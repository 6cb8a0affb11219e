package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/config"
)

func TestJobsDefaults(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Equal(t, config.Jobs{
		TrialPeriod:          30 * 24 * time.Hour,
		TrialExpiryInterval:  5 * time.Minute,
		SweepInterval:        30 * time.Second,
		HoldGrace:            30 * time.Second,
		ReapInterval:         time.Hour,
		SpendInterval:        15 * time.Second,
		SpendGrace:           30 * time.Second,
		IdempotencyRetention: 24 * time.Hour,
		StopTimeout:          10 * time.Second,
		BenchWorkers:         32,
		BenchQuestionTime:    time.Minute,
		BenchTimeout:         15 * time.Minute,
		BenchAttempts:        5,
	}, c.Jobs)
	require.Equal(t, 20, c.Limits.TestLaunchesPerDay)
	require.Equal(t, 3, c.Limits.CertifyLaunchesPerDay)
}

func TestJobsAreValidated(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	for yaml, field := range map[string]string{
		"jobs: {trial_period: 0s}":               "jobs.trial_period",
		"jobs: {trial_expiry_interval: 10ms}":    "jobs.trial_expiry_interval",
		"jobs: {sweep_interval: 0s}":             "jobs.sweep_interval",
		"jobs: {hold_grace: -1s}":                "jobs.hold_grace",
		"jobs: {reap_interval: 0s}":              "jobs.reap_interval",
		"jobs: {spend_grace: 0s}":                "jobs.spend_grace",
		"jobs: {idempotency_retention: 30s}":     "jobs.idempotency_retention",
		"jobs: {stop_timeout: 0s}":               "jobs.stop_timeout",
		"jobs: {bench_workers: 0}":               "jobs.bench_workers",
		"jobs: {bench_timeout: 10ms}":            "jobs.bench_timeout",
		"jobs: {bench_question_time: 0s}":        "jobs.bench_question_time",
		"jobs: {bench_attempts: 0}":              "jobs.bench_attempts",
		"limits: {test_launches_per_day: 0}":     "limits.test_launches_per_day",
		"limits: {certify_launches_per_day: -1}": "limits.certify_launches_per_day",
	} {
		path := filepath.Join(t.TempDir(), "conclave.yaml")
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
		_, err := config.Load(path)
		require.ErrorContains(t, err, field, yaml)
	}

	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("jobs: {trial_period: 1h, hold_grace: 0s}"), 0o600))
	c, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, time.Hour, c.Jobs.TrialPeriod)
	require.Zero(t, c.Jobs.HoldGrace)
	require.Equal(t, 30*time.Second, c.Jobs.SweepInterval, "unset fields keep their default")
}
