package pgtest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestEnsureTemplateRebuildsUnfinished leaves a half-built template behind,
// as a crashed run would, and has several callers race to finish it.
func TestEnsureTemplateRebuildsUnfinished(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := os.Getenv(EnvURL)
	admin, err := adminPool(base)
	require.NoError(t, err)

	name := "conclave_tmpl_t" + randomHex(6)
	clone := "test_" + randomHex(8)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, "ALTER DATABASE "+name+" IS_TEMPLATE false")
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+clone+" WITH (FORCE)")
	})
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	half, err := withDatabase(base, name)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, half)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE leftover (id int)")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ensureTemplate(ctx, admin, base, name)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	ready, exists, err := templateState(ctx, admin, name)
	require.NoError(t, err)
	require.True(t, exists)
	require.True(t, ready)

	_, err = admin.Exec(ctx, "CREATE DATABASE "+clone+" TEMPLATE "+name)
	require.NoError(t, err)
	u, err := withDatabase(base, clone)
	require.NoError(t, err)
	conn, err = pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	var migrated, leftover bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL, to_regclass('leftover') IS NOT NULL").Scan(&migrated, &leftover))
	require.True(t, migrated)
	require.False(t, leftover, "the unfinished template must have been rebuilt")
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, want string }{
		{"host=/tmp/x port=5432 user=postgres dbname=postgres sslmode=disable", "host=/tmp/x port=5432 user=postgres dbname=postgres sslmode=disable dbname=test_1"},
		{"postgres://u:p@db:5432/postgres?sslmode=disable", "postgres://u:p@db:5432/test_1?sslmode=disable"},
		{"postgresql://u@db", "postgresql://u@db/test_1"},
	} {
		got, err := withDatabase(tc.base, "test_1")
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
		cfg, err := pgx.ParseConfig(got)
		require.NoError(t, err)
		require.Equal(t, "test_1", cfg.Database)
	}
}

// fatalRecorder captures Fatalf instead of failing the real test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Not parallel: it unsets TEST_DATABASE_URL while it runs.
func TestNewDatabaseWithoutServerFails(t *testing.T) {
	t.Setenv(EnvURL, "")
	rec := &fatalRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewDatabase(rec)
	}()
	<-done
	require.Contains(t, rec.msg, "TEST_DATABASE_URL is not set")
	require.Contains(t, rec.msg, "pgtest.Main")
}
