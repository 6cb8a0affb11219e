package main

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/pgtest"
)

// serve refuses an operator address off loopback — from the flag, the
// environment or the file — before it opens anything, with one line that
// says why and how; --operator-public (or CONCLAVE_OPERATOR_PUBLIC=true)
// says the address is meant, and serve then binds it, warning once in
// the log.
func TestServeRefusesAPublicOperatorAddressUnlessTold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--operator-addr", "0.0.0.0:0"}},
		{nil, []string{"--operator-addr", ":0"}},
		{[]string{"CONCLAVE_OPERATOR_ADDR=0.0.0.0:0"}, nil},
	} {
		env := append([]string{"DATABASE_URL=", "CONCLAVE_OPERATOR_PUBLIC=", "CONCLAVE_OPERATOR_ADDR="}, c.env...)
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, c.args...)
		out, stderr, code := runBinary(t, t.TempDir(), env, args...)
		require.Equal(t, 1, code, "stderr: %s", stderr)
		require.Empty(t, out)
		msg := strings.TrimRight(stderr, "\n")
		require.NotContains(t, msg, "\n", "one line: %q", msg)
		for _, want := range []string{"server.operator_addr", "not a loopback address", "--operator-public", "127.0.0.1"} {
			require.Contains(t, msg, want)
		}
	}

	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + pgtest.NewDatabase(t), "CONCLAVE_OPERATOR_PUBLIC="},
		"--operator-addr", "0.0.0.0:0", "--operator-public")
	op := p.operatorBase(t)
	u, err := url.Parse(op)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	require.False(t, net.ParseIP(host).IsLoopback(), "bound on every interface: %s", op)
	status, body := get(t, "http://127.0.0.1:"+port+"/metrics", "")
	require.Equal(t, 200, status, body)
	require.Contains(t, p.stderr.String(), `"level":"WARN","msg":"the operator listener is not on loopback`)
	p.stop(t)
}
