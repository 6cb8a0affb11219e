// Package pgtest gives tests real, isolated PostgreSQL databases.
//
// Every database handed out is a fresh clone of a template database that
// holds all pgstore migrations and River's (the job queue's), so a test
// starts from the current schema in a few milliseconds and can do anything
// to its database; it is dropped when the test ends.
//
// The server is the one TEST_DATABASE_URL points at (any database on it; the
// harness must be allowed to CREATE DATABASE). When it is unset, Main starts
// a throwaway local cluster for the test binary (see package localpg);
// `go run ./internal/pgtest/testpg -- go test ./...` starts one for a whole
// test run instead, so that all packages share it and its template.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		t.Parallel()
//		pool := pgtest.NewPool(t)
//		...
//	}
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/localpg"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// EnvURL names the environment variable holding the test server's
// connection string.
const EnvURL = "TEST_DATABASE_URL"

// templateLockKey is the advisory lock (in the server's maintenance
// database) under which the template database is built.
const templateLockKey int64 = 0x636c7067746d706c // "clpgtmpl"

// Main runs the tests of a package. When TEST_DATABASE_URL is unset it first
// starts a throwaway local PostgreSQL cluster (localpg, Fast) in a temporary
// directory and points TEST_DATABASE_URL at it; the cluster is stopped and
// removed after the tests, or on SIGINT/SIGTERM. It exits the process with
// the tests' exit code. If PostgreSQL is not installed the tests fail.
//
// after runs once the tests are done, before the process exits: for other
// harnesses' clean-up (plugintest.Cleanup, say).
func Main(m *testing.M, after ...func()) {
	run := func() int {
		code := m.Run()
		for _, f := range after {
			f()
		}
		return code
	}
	if os.Getenv(EnvURL) != "" {
		code := run()
		closeAdmin()
		os.Exit(code)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cluster, err := localpg.StartTemp(ctx, localpg.Config{})
	cancel()
	if err != nil {
		// ErrNoBinaries's message is one line telling how to fix it.
		hint := ""
		if errors.Is(err, localpg.ErrNoBinaries) {
			hint = "; or set " + EnvURL + " to a server where the tests may CREATE DATABASE"
		}
		fmt.Fprintf(os.Stderr, "pgtest: cannot start a PostgreSQL cluster for the tests: %v%s\n", err, hint)
		os.Exit(1)
	}
	go func() {
		s := <-sigs
		closeAdmin()
		_ = cluster.Stop()
		fmt.Fprintf(os.Stderr, "pgtest: %v: stopped the test cluster\n", s)
		os.Exit(1)
	}()
	if err := os.Setenv(EnvURL, cluster.URLFor("postgres")); err != nil {
		_ = cluster.Stop()
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		os.Exit(1)
	}

	code := run()
	closeAdmin()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping the test cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// NewDatabase creates a fresh database holding the migrated schema and
// returns its connection string. The database is dropped when the test ends.
// It fails the test when TEST_DATABASE_URL is unset (see Main).
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, true)
}

// NewEmptyDatabase creates a fresh database with no schema at all — for
// tests of migration itself, such as replicas racing to migrate one
// database. It is dropped when the test ends.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, false)
}

func newDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Fatalf("pgtest: %s is not set: call pgtest.Main(m) from TestMain, run the tests with `go run ./internal/pgtest/testpg -- go test ./...`, or point %s at a PostgreSQL server", EnvURL, EnvURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := adminPool(base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	tmpl := "template0"
	if migrated {
		if tmpl, err = sharedTemplate(admin, base); err != nil {
			t.Fatalf("pgtest: preparing the template database: %v", err)
		}
	}

	name := "test_" + randomHex(8)
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{tmpl}.Sanitize()
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err = admin.Exec(ctx, create)
		if err == nil {
			break
		}
		// 55006 object_in_use: "source database is being accessed by other users".
		if sqlState(err) != "55006" || attempt == 8 {
			t.Fatalf("pgtest: creating database %s from %s: %v", name, tmpl, err)
		}
		time.Sleep(backoff)
		backoff *= 2
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	u, err := withDatabase(base, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// NewPool returns a pgx pool on a NewDatabase; the pool is closed when the
// test ends (before the database is dropped).
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", u, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewDurableDatabase starts a throwaway cluster with a deployed cluster's
// durability (localpg.StartTempDurable: every synchronous commit waits for
// the disk), migrates its database and returns the database's connection
// string. The cluster is stopped and removed when the test ends. For
// benchmarks whose figures must include what durable commits cost; tests
// use NewDatabase, on the shared fast cluster.
func NewDurableDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := localpg.StartTempDurable(ctx, localpg.Config{})
	if err != nil {
		t.Fatalf("pgtest: starting a durable cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("pgtest: stopping the durable cluster: %v", err)
		}
	})
	pool, err := pgxpool.New(ctx, cluster.URL())
	if err != nil {
		t.Fatalf("pgtest: connecting to the durable cluster: %v", err)
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatalf("pgtest: migrating the durable cluster: %v", err)
	}
	return cluster.URL()
}

// OrgCreatedAgo creates an organisation, with its trial credit, whose
// creation is back-dated by age, for what acts on an organisation's age
// (trial expiry), and returns its id.
func OrgCreatedAgo(t testing.TB, pool *pgxpool.Pool, name string, age time.Duration) string {
	t.Helper()
	ctx := context.Background()
	org, _, err := pgstore.New(pool).CreateOrg(ctx, &core.CreateOrgParams{Name: name})
	if err != nil {
		t.Fatalf("pgtest: creating organisation %q: %v", name, err)
	}
	if _, err := pool.Exec(ctx, "UPDATE orgs SET created_at = now() - $2 * interval '1 microsecond' WHERE id = $1", org.ID, age.Microseconds()); err != nil {
		t.Fatalf("pgtest: back-dating organisation %q: %v", name, err)
	}
	return org.ID
}

// TemplateName is the name of the migrated template database for the
// current migrations: conclave_tmpl_<first 12 hex of the SHA-256 of
// pgstore.MigrationsDigest and pgstore.RiverMigrationsDigest>, so a change
// to either schema builds a new template.
func TemplateName() string {
	h := sha256.Sum256([]byte(pgstore.MigrationsDigest() + "\x00" + pgstore.RiverMigrationsDigest()))
	return "conclave_tmpl_" + hex.EncodeToString(h[:6])
}

var admin struct {
	mu   sync.Mutex
	url  string
	pool *pgxpool.Pool
}

// adminPool is a small pool on the server's maintenance database (the one
// TEST_DATABASE_URL names), shared by the tests of this process.
func adminPool(base string) (*pgxpool.Pool, error) {
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if admin.pool != nil && admin.url == base {
		return admin.pool, nil
	}
	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", EnvURL, err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", EnvURL, err)
	}
	if admin.pool != nil {
		admin.pool.Close()
	}
	admin.url, admin.pool = base, pool
	return pool, nil
}

func closeAdmin() {
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if admin.pool != nil {
		admin.pool.Close()
		admin.pool = nil
	}
}

var tmplOnce struct {
	mu   sync.Mutex
	done map[string]string // base URL -> template name
}

// sharedTemplate ensures the template exists, once per process and server.
func sharedTemplate(admin *pgxpool.Pool, base string) (string, error) {
	tmplOnce.mu.Lock()
	defer tmplOnce.mu.Unlock()
	if name, ok := tmplOnce.done[base]; ok {
		return name, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	name := TemplateName()
	if err := ensureTemplate(ctx, admin, base, name); err != nil {
		return "", err
	}
	if tmplOnce.done == nil {
		tmplOnce.done = map[string]string{}
	}
	tmplOnce.done[base] = name
	return name, nil
}

// ensureTemplate makes sure database name exists, holds every migration and
// is marked as a template. Concurrent callers — other test binaries
// included — serialise on an advisory lock; a half-built template (not
// marked, left by a crashed run) is dropped and rebuilt.
func ensureTemplate(ctx context.Context, admin *pgxpool.Pool, base, name string) error {
	if ready, _, err := templateState(ctx, admin, name); err != nil {
		return err
	} else if ready {
		return nil
	}

	conn, err := admin.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return fmt.Errorf("taking the template lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey)
	}()

	ready, exists, err := templateState(ctx, conn, name)
	if err != nil || ready {
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	if exists {
		if _, err := conn.Exec(ctx, "DROP DATABASE "+ident+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("dropping the unfinished template %s: %w", name, err)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident+" TEMPLATE template0"); err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	u, err := withDatabase(base, name)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", name, err)
	}
	err = pgstore.Migrate(ctx, pool)
	if err == nil {
		err = pgstore.MigrateRiver(ctx, pool)
	}
	pool.Close()
	if err != nil {
		return fmt.Errorf("migrating %s: %w", name, err)
	}
	// No connections from now on: a session on the template would make
	// CREATE DATABASE … TEMPLATE fail. Marking it a template comes last and
	// is what makes it ready.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident+" WITH ALLOW_CONNECTIONS false IS_TEMPLATE true"); err != nil {
		return fmt.Errorf("marking %s as a template: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		return fmt.Errorf("closing sessions on %s: %w", name, err)
	}
	return nil
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// templateState reports whether database name exists and is a template.
func templateState(ctx context.Context, q queryRower, name string) (ready, exists bool, err error) {
	err = q.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("looking up %s: %w", name, err)
	}
	return ready, true, nil
}

// withDatabase returns connection string base with its database replaced.
func withDatabase(base, db string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return "", fmt.Errorf("parsing %s: %w", EnvURL, err)
		}
		u.Path = "/" + db
		u.RawPath = ""
		q := u.Query()
		if q.Has("dbname") {
			q.Set("dbname", db)
			u.RawQuery = q.Encode()
		}
		return u.String(), nil
	}
	// Keyword/value form: a later keyword overrides an earlier one.
	return strings.TrimSpace(base) + " dbname=" + quoteValue(db), nil
}

func quoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}
