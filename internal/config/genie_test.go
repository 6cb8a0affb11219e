package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/config"
)

func TestGenieDefaultsAndValidation(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Equal(t, config.Genie{ChatHistory: true, HistoryRetention: 720 * time.Hour, QuoteTTL: 15 * time.Minute}, c.Genie)

	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("genie: {chat_history: false}"), 0o600))
	c, err = config.Load(path)
	require.NoError(t, err)
	require.False(t, c.Genie.ChatHistory)
	require.Equal(t, 15*time.Minute, c.Genie.QuoteTTL, "the other defaults stay")

	for yaml, field := range map[string]string{
		"genie: {history_retention: 30m}": "genie.history_retention",
		"genie: {quote_ttl: 10s}":         "genie.quote_ttl",
		"genie: {quote_ttl: 48h}":         "genie.quote_ttl",
	} {
		path := filepath.Join(t.TempDir(), "conclave.yaml")
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
		_, err := config.Load(path)
		require.ErrorContains(t, err, field, yaml)
	}
}
