package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/config"
)

func TestAlertsDefaultsAndValidation(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Equal(t, config.Alerts{Interval: time.Minute, WebhookAttempts: 8, WebhookTimeout: 10 * time.Second}, c.Alerts)

	for yaml, field := range map[string]string{
		"alerts: {interval: 10ms}":                                              "alerts.interval",
		"alerts: {webhook_attempts: 0}":                                         "alerts.webhook_attempts",
		"alerts: {webhook_timeout: 2m}":                                         "alerts.webhook_timeout",
		"server: {addr: ':8080'}\nalerts: {allow_loopback_webhooks: true}":      "alerts.allow_loopback_webhooks",
		"server: {addr: '0.0.0.0:80'}\nalerts: {allow_loopback_webhooks: true}": "alerts.allow_loopback_webhooks",
	} {
		path := filepath.Join(t.TempDir(), "conclave.yaml")
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
		_, err := config.Load(path)
		require.ErrorContains(t, err, field, yaml)
	}
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server: {addr: '127.0.0.1:0'}\nalerts: {allow_loopback_webhooks: true}"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err, "a test's server on loopback may reach a loopback receiver")
	require.True(t, c.Alerts.AllowLoopbackWebhooks)
}
