package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/config"
)

// The operator listener answers /metrics and a /readyz that names its
// cause without a key, so an address anyone else may reach is refused
// unless server.operator_public says it is meant: loopback (127.0.0.0/8,
// ::1, localhost) and "off" need nothing; every other host, and an empty
// one, which binds every interface, needs it. The refusal says why and
// how.
func TestOperatorAddrMustBeLoopbackUnlessPublic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr   string
		public bool
		ok     bool
	}{
		{"127.0.0.1:8081", false, true},
		{"127.0.0.1:0", false, true},
		{"127.9.8.7:9100", false, true},
		{"[::1]:9100", false, true},
		{"localhost:9100", false, true},
		{"LocalHost:9100", false, true},
		{"off", false, true},
		{"0.0.0.0:8081", false, false},
		{":9001", false, false},
		{"[::]:9100", false, false},
		{"10.0.0.5:9100", false, false},
		{"128.0.0.1:9100", false, false},
		{"[::ffff:10.0.0.5]:9100", false, false},
		{"metrics.internal:9100", false, false},
		{"localhost.example.com:9100", false, false},
		{"0.0.0.0:8081", true, true},
		{":9001", true, true},
		{"10.0.0.5:9100", true, true},
		{"127.0.0.1:8081", true, true},
	} {
		c, err := config.Builtin()
		require.NoError(t, err)
		c.Server.OperatorAddr, c.Server.OperatorPublic = tc.addr, tc.public
		err = c.Validate()
		if tc.ok {
			require.NoError(t, err, "%s public=%v", tc.addr, tc.public)
			continue
		}
		require.Error(t, err, "%s public=%v", tc.addr, tc.public)
		for _, want := range []string{"server.operator_addr", tc.addr, "not a loopback address", "/metrics",
			"server.operator_public: true", "--operator-public", "CONCLAVE_OPERATOR_PUBLIC", "127.0.0.1"} {
			require.Contains(t, err.Error(), want, tc.addr)
		}
	}
}

// server.operator_public comes from the file or from
// CONCLAVE_OPERATOR_PUBLIC (true or false), which wins over the file; any
// other value is an error naming the setting.
func TestOperatorPublicFromFileAndEnvironment(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("CONCLAVE_ADDR", "")
	t.Setenv("CONCLAVE_OPERATOR_ADDR", "0.0.0.0:9100")
	t.Setenv("CONCLAVE_OPERATOR_PUBLIC", "")
	_, err := config.Load("")
	require.ErrorContains(t, err, "not a loopback address")

	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server:\n  operator_public: true\n"), 0o600))
	c, err := config.Load(path)
	require.NoError(t, err)
	require.True(t, c.Server.OperatorPublic)

	t.Setenv("CONCLAVE_OPERATOR_PUBLIC", "false")
	_, err = config.Load(path)
	require.ErrorContains(t, err, "not a loopback address", "the environment overrides the file")
	t.Setenv("CONCLAVE_OPERATOR_PUBLIC", "true")
	c, err = config.Load("")
	require.NoError(t, err)
	require.True(t, c.Server.OperatorPublic)
	t.Setenv("CONCLAVE_OPERATOR_PUBLIC", "yes please")
	_, err = config.Load("")
	require.ErrorContains(t, err, "CONCLAVE_OPERATOR_PUBLIC")
	require.ErrorContains(t, err, "server.operator_public")
}
