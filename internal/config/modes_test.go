package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/config"
)

// limits.modes_per_org is 100 unless set, and at least 1.
func TestModesPerOrg(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	c, err := config.Load("")
	require.NoError(t, err)
	require.Equal(t, 100, c.Limits.ModesPerOrg)

	for yaml, want := range map[string]string{
		"limits: {modes_per_org: 250}": "",
		"limits: {modes_per_org: 0}":   "limits.modes_per_org",
		"limits: {modes_per_org: -3}":  "limits.modes_per_org",
	} {
		path := filepath.Join(t.TempDir(), "conclave.yaml")
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
		c, err := config.Load(path)
		if want != "" {
			require.ErrorContains(t, err, want, yaml)
			continue
		}
		require.NoError(t, err, yaml)
		require.Equal(t, 250, c.Limits.ModesPerOrg)
	}
}
