package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/localpg"
)

// A newcomer's first hour with the binary: make run's banner and its demo
// key, the admin commands finding the server's database, and what an
// unauthenticated /readyz says when that database is gone.

// managedDataDir is a data directory for a managed cluster: short, so that
// the cluster's Unix socket path fits, and traversable by the server's OS
// user when the tests run as root.
func managedDataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ccl")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

var bannerRe = regexp.MustCompile(`^Conclave is serving on (http://localhost:\d+)\n` +
	`Dashboard: http://localhost:\d+/ \(sign in there\)\n` +
	`MCP clients: http://localhost:\d+/mcp \(Claude, ChatGPT, VS Code, Cursor sign you in there; or send the demo key\)\n` +
	`Demo organisation DEMO \((org_\w+)\), balance \$10\n` +
	`Demo key: (ccl_live_[A-Za-z0-9_-]{43})\n` +
	`Demo owner owner@demo\.example: open (http://localhost:\d+/link/[A-Za-z0-9_-]{43}) to register a passkey or set a password \(single-use, for 7 days\)$`)

// startDemo runs `serve --demo` on the managed cluster in dataDir, from a
// working directory of its own, and checks its banner: stdout holds the
// URL, the demo organisation and the demo key and nothing else — the logs
// are on stderr — and the key lists the models.
func startDemo(t *testing.T, dataDir string) (p *process, orgID, key string) {
	t.Helper()
	p = startServe(t, t.TempDir(), []string{"DATABASE_URL=", "CONCLAVE_DATA_DIR="}, "--demo", "--data-dir", dataDir)
	p.demoKey(t)
	// The owner's set-up link is the banner's last line, printed after the
	// key: wait for the whole banner before reading it.
	var m []string
	require.Eventually(t, func() bool {
		m = bannerRe.FindStringSubmatch(p.stdout.String())
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "stdout is the banner alone:\n%s", p.stdout)
	require.Equal(t, p.base, m[1])
	require.NotEmpty(t, p.operatorBase(t), "the logs, the serving line among them, go to stderr")
	status, body := get(t, p.base+"/v1/models", m[3])
	require.Equal(t, 200, status, body)
	return p, m[2], m[3]
}

// adminJSONArray is adminJSON for a command that prints a JSON array.
func adminJSONArray(t testing.TB, env []string, args ...string) []any {
	t.Helper()
	out, stderr, code := runBinary(t, t.TempDir(), append([]string{"DATABASE_URL=", "CONCLAVE_DATA_DIR="}, env...),
		append(args, "--json")...)
	require.Equal(t, 0, code, "%v: %s", args, stderr)
	var v []any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

// adminJSON runs an admin command through the binary from an empty working
// directory and decodes its --json output.
func adminJSON(t testing.TB, env []string, args ...string) map[string]any {
	t.Helper()
	out, stderr, code := runBinary(t, t.TempDir(), append([]string{"DATABASE_URL=", "CONCLAVE_DATA_DIR="}, env...),
		append(args, "--json")...)
	require.Zero(t, code, "%v: %s", args, stderr)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

// make run's banner ends with the URL, the demo organisation and the demo
// key; a restart on the same data directory prints the same key, which
// still authenticates, rather than minting another.
func TestServeDemoBannerKeepsOneKeyAcrossRestarts(t *testing.T) {
	t.Parallel()
	dataDir := managedDataDir(t)
	keyFile := filepath.Join(dataDir, demoKeyFile)

	p1, org1, key1 := startDemo(t, dataDir)
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the key is readable by its user only")
	p1.stop(t)
	require.NotNil(t, bannerRe.FindStringSubmatch(p1.stdout.String()), "nothing follows the banner on stdout:\n%s", p1.stdout)

	p2, org2, key2 := startDemo(t, dataDir)
	require.Equal(t, org1, org2)
	require.Equal(t, key1, key2, "the same key on every start")
	keys := adminJSON(t, nil, "key", "list", "--org", org2, "--data-dir", dataDir)["keys"].([]any)
	require.Len(t, keys, 1, "one demo key, not one per start")
	require.Equal(t, "active", keys[0].(map[string]any)["status"])
	p2.stop(t)

	// A key file other users could read is not trusted: its key is revoked
	// and another one issued and kept.
	require.NoError(t, os.Chmod(keyFile, 0o644))
	p3, _, key3 := startDemo(t, dataDir)
	require.NotEqual(t, key1, key3)
	status, body := get(t, p3.base+"/v1/models", key1)
	require.Equal(t, 401, status, body)
	require.Contains(t, body, `"code":"revoked_api_key"`)
	fi, err = os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Contains(t, p3.stderr.String(), "could be read by other users")
	p3.stop(t)
}

// Without DATABASE_URL the admin commands act on the cluster serve manages
// in the data directory. Run elsewhere, they stop with one line saying where
// they looked rather than create an empty cluster the server never sees;
// pointed at the server's data directory (--data-dir or CONCLAVE_DATA_DIR),
// they act on its database, running or stopped.
func TestAdminCommandsFindTheServersDataDir(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	for _, args := range [][]string{
		{"org", "create", "--name", "Acme"},
		{"key", "list", "--org", "org_x"},
		{"balance", "show", "--org", "org_x"},
		{"jobs", "sweep"},
		{"migrate"},
	} {
		out, stderr, code := runBinary(t, empty, []string{"DATABASE_URL=", "CONCLAVE_DATA_DIR="}, args...)
		require.Equal(t, 1, code, "%v: %s", args, stderr)
		require.Empty(t, out)
		line := strings.TrimSuffix(stderr, "\n")
		require.NotContains(t, line, "\n", "one line: %q", stderr)
		require.Contains(t, line, "no PostgreSQL cluster in "+filepath.Join(empty, ".data", "pg"))
		require.Contains(t, line, "--data-dir")
		require.Contains(t, line, "CONCLAVE_DATA_DIR")
		require.Contains(t, line, "DATABASE_URL")
	}
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was created")

	dataDir := managedDataDir(t)
	p, orgID, _ := startDemo(t, dataDir)
	// A key made by the admin command, from another directory, is a key
	// of the server's database: the server accepts it.
	created := adminJSON(t, nil, "key", "create", "--org", orgID, "--name", "ci", "--data-dir", dataDir)
	status, body := get(t, p.base+"/v1/models", created["key"].(string))
	require.Equal(t, 200, status, body)
	keys := adminJSON(t, []string{"CONCLAVE_DATA_DIR=" + dataDir}, "key", "list", "--org", orgID)["keys"].([]any)
	require.Len(t, keys, 2, "the demo key and ci")

	// People: the operator adds a person, whose set-up link opens on the
	// server; the audit trail names the operator for both, and the demo
	// owner made on the first start.
	ada := adminJSON(t, nil, "person", "create", "--org", "DEMO", "--email", "Ada@Demo.example", "--role", "member", "--data-dir", dataDir)
	require.Equal(t, "ada@demo.example", ada["email"])
	// The command names the configured origin (server.addr's port, 8080
	// here); this server listens on a port of its own.
	link := ada["setup_link"].(string)
	require.True(t, strings.HasPrefix(link, "http://localhost:8080/link/"), link)
	status, body = get(t, p.base+strings.TrimPrefix(link, "http://localhost:8080"), "")
	require.Equal(t, 200, status)
	require.Contains(t, body, "ada@demo.example")
	rows := adminJSONArray(t, nil, "audit", "--org", "DEMO", "--data-dir", dataDir)
	var seen []string
	for _, r := range rows {
		row := r.(map[string]any)
		require.Equal(t, orgID, row["org_id"])
		seen = append(seen, row["action"].(string)+" by "+row["actor_kind"].(string))
	}
	require.Subset(t, seen, []string{"person.joined by operator", "person.setup_link_created by operator", "key.created by operator"})
	out, _, code := runBinary(t, t.TempDir(), []string{"DATABASE_URL=", "CONCLAVE_DATA_DIR="}, "audit", "--org", "DEMO", "--since", "1h", "--data-dir", dataDir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "person.joined")
	require.NotContains(t, out, created["key"].(string), "no secret in the audit trail")
	p.stop(t)

	// The server is gone: the command starts the stopped cluster, acts, and
	// stops it again.
	bal := adminJSON(t, []string{"CONCLAVE_DATA_DIR=" + dataDir}, "balance", "show", "--org", orgID)
	require.Equal(t, 10.0, bal["balance_usd"])
	require.NoFileExists(t, filepath.Join(dataDir, "pg", "postmaster.pid"))
}

// The public /readyz answers anyone, so with the database gone it says only
// "Not ready.": the driver's error — which names the socket path, the user
// and the database — goes to the operator listener and the log.
func TestPublicReadyzNamesNoSocketPathWhenTheDatabaseIsGone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := localpg.StartTemp(ctx, localpg.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop() })
	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + cluster.URL()})
	op := p.operatorBase(t)
	status, body := get(t, p.base+"/readyz", "")
	require.Equal(t, 200, status, body)

	socketDir := cluster.Dir()
	require.NoError(t, cluster.Stop())

	// Once the server is gone, a new connection fails on its socket: the
	// operator listener's cause names the path.
	require.Eventually(t, func() bool {
		status, body := get(t, op+"/readyz", "")
		return status == 503 && strings.Contains(body, socketDir)
	}, 30*time.Second, 50*time.Millisecond, "the operator listener names the socket path")

	status, body = get(t, p.base+"/readyz", "")
	require.Equal(t, 503, status, body)
	var envelope struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
		Conclave struct {
			RequestID string `json:"request_id"`
		} `json:"conclave"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &envelope), body)
	require.Equal(t, "Not ready.", envelope.Error.Message)
	require.Equal(t, "service_unavailable", envelope.Error.Code)
	// The request id is random and may spell a short path element ("pg");
	// everything else in the body is checked.
	rest := strings.Replace(body, envelope.Conclave.RequestID, "", 1)
	for _, leak := range []string{socketDir, filepath.Base(socketDir), ".s.PGSQL", "user=", "postgres", "dbname", "dial"} {
		require.NotContains(t, rest, leak)
	}
	// The log line is written after the answer is sent.
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(line, `"msg":"not ready"`) && strings.Contains(line, socketDir) {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the cause is logged:\n%s", p.stderr)
}
