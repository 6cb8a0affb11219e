package pgtest_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func tableExists(t *testing.T, pool *pgxpool.Pool, table string) bool {
	t.Helper()
	var exists bool
	require.NoError(t, pool.QueryRow(ctxFor(t), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists))
	return exists
}

func TestTableInOneDatabaseIsAbsentInAnother(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	a, b := pgtest.NewPool(t), pgtest.NewPool(t)
	_, err := a.Exec(ctx, "CREATE TABLE only_in_a (id int)")
	require.NoError(t, err)
	require.True(t, tableExists(t, a, "only_in_a"))
	require.False(t, tableExists(t, b, "only_in_a"))
}

// TestParallelTestsAreIsolated runs two parallel tests that create the same
// table at the same time; each sees only its own row, and both databases
// are gone once the tests are over.
func TestParallelTestsAreIsolated(t *testing.T) {
	t.Parallel()
	var bothCreated sync.WaitGroup
	bothCreated.Add(2)
	dbs := make(chan string, 2)
	t.Run("group", func(t *testing.T) {
		for _, who := range []string{"a", "b"} {
			t.Run(who, func(t *testing.T) {
				t.Parallel()
				created := sync.OnceFunc(bothCreated.Done)
				defer created() // never leave the sibling waiting
				ctx := ctxFor(t)
				pool := pgtest.NewPool(t)
				_, err := pool.Exec(ctx, "CREATE TABLE probe (who text)")
				require.NoError(t, err)
				_, err = pool.Exec(ctx, "INSERT INTO probe VALUES ($1)", who)
				require.NoError(t, err)
				created()
				bothCreated.Wait()

				var whos []string
				require.NoError(t, pool.QueryRow(ctx, "SELECT array_agg(who) FROM probe").Scan(&whos))
				require.Equal(t, []string{who}, whos)
				var db string
				require.NoError(t, pool.QueryRow(ctx, "SELECT current_database()").Scan(&db))
				dbs <- db
			})
		}
	})
	close(dbs)

	conn, err := pgx.Connect(ctxFor(t), os.Getenv(pgtest.EnvURL))
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	var names []string
	for db := range dbs {
		names = append(names, db)
		var exists bool
		require.NoError(t, conn.QueryRow(ctxFor(t), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists))
		require.False(t, exists, "database %s must be dropped after its test", db)
	}
	require.Len(t, names, 2)
	require.NotEqual(t, names[0], names[1])
}

func TestDatabasesAreMigrated(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	pool := pgtest.NewPool(t)
	require.True(t, tableExists(t, pool, "schema_migrations"))
	require.True(t, tableExists(t, pool, "river_job"), "River's schema is in the template")
	require.True(t, tableExists(t, pool, "river_migration"))
	var applied int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&applied))
	require.Positive(t, applied)

	conn, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvURL))
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	var isTemplate, allowConn bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1",
		pgtest.TemplateName()).Scan(&isTemplate, &allowConn))
	require.True(t, isTemplate)
	require.False(t, allowConn)
	require.Regexp(t, `^conclave_tmpl_[0-9a-f]{12}$`, pgtest.TemplateName())
}

func TestNewDatabaseURLIsUsable(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	url := pgtest.NewDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	var db string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	require.Regexp(t, `^test_[0-9a-f]{16}$`, db)
}

// A durable database: its own cluster, fsync on, the schema migrated, and
// the cluster gone with the test.
func TestNewDurableDatabase(t *testing.T) {
	t.Parallel()
	var dir string
	t.Run("durable", func(t *testing.T) {
		ctx := ctxFor(t)
		url := pgtest.NewDurableDatabase(t)
		cfg, err := pgx.ParseConfig(url)
		require.NoError(t, err)
		dir = cfg.Host
		require.DirExists(t, dir)
		pool, err := pgxpool.New(ctx, url)
		require.NoError(t, err)
		defer pool.Close()
		var fsync string
		require.NoError(t, pool.QueryRow(ctx, "SHOW fsync").Scan(&fsync))
		require.Equal(t, "on", fsync)
		var latest int
		require.NoError(t, pool.QueryRow(ctx, "SELECT max(version) FROM schema_migrations").Scan(&latest))
		require.Equal(t, pgstore.LatestVersion(), latest)
		org := pgtest.OrgCreatedAgo(t, pool, "Aged", 48*time.Hour)
		var age time.Duration
		require.NoError(t, pool.QueryRow(ctx, "SELECT extract(epoch FROM now() - created_at)::bigint * 1000000000 FROM orgs WHERE id = $1", org).Scan(&age))
		require.InDelta(t, float64(48*time.Hour), float64(age), float64(time.Minute))
	})
	require.NotEmpty(t, dir)
	require.NoDirExists(t, dir, "the cluster is removed when the test ends")
}
