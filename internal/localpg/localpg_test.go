package localpg

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// tempRoot is a short temporary directory the server's user can traverse.
func tempRoot(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("", "lpgt")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	return root
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(testCtx(t), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func reachable(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false
	}
	_ = conn.Close(ctx)
	return true
}

// TestStartStopRestart runs a real initdb (no cache) and the durable
// default settings.
func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := filepath.Join(tempRoot(t), "data", "pg")

	c1, err := Start(ctx, Config{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c1.Stop() })
	require.True(t, c1.owned)
	require.Contains(t, c1.URL(), "dbname=conclave")
	require.Contains(t, c1.URL(), "host="+dir+" ")

	conn := connect(t, c1.URL())
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
	var listen, db, fsync string
	require.NoError(t, conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen))
	require.Empty(t, listen, "the server must not listen on TCP")
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	require.Equal(t, "conclave", db)
	require.NoError(t, conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync))
	require.Equal(t, "on", fsync, "durability stays on unless Fast")
	var maxConns int
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&maxConns))
	require.Equal(t, 200, maxConns)
	_, err = conn.Exec(ctx, "CREATE TABLE survives (id int); INSERT INTO survives VALUES (42)")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	// A second Start on the running cluster attaches without owning it.
	c2, err := Start(ctx, Config{Dir: dir})
	require.NoError(t, err)
	require.False(t, c2.owned)
	require.NoError(t, c2.Stop())
	require.True(t, reachable(c1.URL()), "stopping a non-owning Cluster must leave the server running")

	require.NoError(t, c1.Stop())
	require.NoError(t, c1.Stop(), "Stop twice")
	require.False(t, reachable(c1.URL()), "the server must be down after Stop")

	// Restart reuses the data.
	c3, err := Start(ctx, Config{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c3.Stop() })
	require.True(t, c3.owned)
	var v int
	require.NoError(t, connect(t, c3.URL()).QueryRow(ctx, "SELECT id FROM survives").Scan(&v))
	require.Equal(t, 42, v)
	require.NoError(t, c3.Stop())
}

// Existing acts on a cluster already initialised in Dir, running or not,
// and creates nothing — not even the directory — when there is none.
func TestStartExistingCreatesNothing(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	root := tempRoot(t)
	dir := filepath.Join(root, "data", "pg")
	cache, _ := DefaultInitCache("")

	_, err := Start(ctx, Config{Dir: dir, Existing: true})
	require.ErrorIs(t, err, ErrNoCluster)
	require.Contains(t, err.Error(), dir)
	require.NoDirExists(t, filepath.Join(root, "data"), "no directory, no lock file, no initdb")

	owner, err := Start(ctx, Config{Dir: dir, Fast: true, InitCache: cache})
	require.NoError(t, err)
	t.Cleanup(func() { _ = owner.Stop() })
	_, err = connect(t, owner.URL()).Exec(ctx, "CREATE TABLE mark (id int)")
	require.NoError(t, err)

	running, err := Start(ctx, Config{Dir: dir, Existing: true})
	require.NoError(t, err, "a running cluster is used")
	require.False(t, running.owned)
	require.NoError(t, running.Stop())
	require.NoError(t, owner.Stop())

	stopped, err := Start(ctx, Config{Dir: dir, Existing: true, Fast: true})
	require.NoError(t, err, "a stopped cluster is started")
	t.Cleanup(func() { _ = stopped.Stop() })
	require.True(t, stopped.owned)
	var n int
	require.NoError(t, connect(t, stopped.URL()).QueryRow(ctx, "SELECT count(*) FROM mark").Scan(&n), "the same cluster")
	require.NoError(t, stopped.Stop())
}

func TestConcurrentStartSameDir(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := filepath.Join(tempRoot(t), "pg")
	cache, _ := DefaultInitCache("")

	var wg sync.WaitGroup
	clusters := make([]*Cluster, 4)
	errs := make([]error, len(clusters))
	for i := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clusters[i], errs[i] = Start(ctx, Config{Dir: dir, Fast: true, InitCache: cache})
		}()
	}
	wg.Wait()
	owners := 0
	for i, c := range clusters {
		require.NoError(t, errs[i])
		if c.owned {
			owners++
			t.Cleanup(func() { _ = c.Stop() })
		}
		var one int
		require.NoError(t, connect(t, c.URL()).QueryRow(ctx, "SELECT 1").Scan(&one))
	}
	require.Equal(t, 1, owners, "exactly one Start must have started the server")
	for _, c := range clusters {
		require.NoError(t, c.Stop())
	}
}

func TestInitCache(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	root := tempRoot(t)
	cache := filepath.Join(root, "cache", "pg-initdb")

	c1, err := Start(ctx, Config{Dir: filepath.Join(root, "a"), Fast: true, InitCache: cache})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c1.Stop() })
	require.FileExists(t, filepath.Join(cache, "PG_VERSION"), "the cache is filled on first use")
	require.NoFileExists(t, filepath.Join(cache, "postmaster.pid"), "the cache holds a never-started cluster")
	require.NoError(t, c1.Stop())

	var logs logtest.Buffer
	c2, err := Start(ctx, Config{Dir: filepath.Join(root, "b"), Fast: true, InitCache: cache, Database: "other",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Stop() })
	require.Contains(t, logs.String(), "copying a cached initdb output")
	require.NotContains(t, logs.String(), "initialising a new cluster")
	var fsync, db string
	conn := connect(t, c2.URL())
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_database()").Scan(&fsync, &db))
	require.Equal(t, "off", fsync)
	require.Equal(t, "other", db)
	require.NoError(t, c2.Stop())
}

func TestStartTempRemovesDir(t *testing.T) {
	t.Parallel()
	c, err := StartTemp(testCtx(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	require.Contains(t, c.URL(), "dbname=postgres")
	require.True(t, reachable(c.URL()))
	require.DirExists(t, c.Dir())
	require.NoError(t, c.Stop())
	require.NoDirExists(t, filepath.Dir(c.Dir()))
}

func TestStartTempDurableKeepsDurability(t *testing.T) {
	t.Parallel()
	c, err := StartTempDurable(testCtx(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	var fsync, fpw string
	conn := connect(t, c.URL())
	require.NoError(t, conn.QueryRow(testCtx(t), "SELECT current_setting('fsync'), current_setting('full_page_writes')").Scan(&fsync, &fpw))
	require.Equal(t, "on", fsync)
	require.Equal(t, "on", fpw)
	require.NoError(t, c.Stop())
	require.NoDirExists(t, filepath.Dir(c.Dir()))
}

func TestNoBinaries(t *testing.T) {
	t.Parallel()
	_, err := Start(testCtx(t), Config{Dir: filepath.Join(tempRoot(t), "pg"), BinDir: t.TempDir()})
	require.ErrorIs(t, err, ErrNoBinaries)
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, ErrNoBinaries.Error(), "install PostgreSQL")
	require.Contains(t, ErrNoBinaries.Error(), "DATABASE_URL")
}

func TestSocketPathTooLong(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(tempRoot(t), strings.Repeat("x", 120))
	_, err := Start(testCtx(t), Config{Dir: dir})
	require.ErrorContains(t, err, "too long for a Unix socket")
	require.NoDirExists(t, dir)
}

// A server that runs as another OS user (postgres, when Conclave runs as
// root) must be able to traverse every parent of its directory: the check
// refuses a closed one, by name. As root, Start itself refuses too.
func TestRootNeedsTraversableParent(t *testing.T) {
	t.Parallel()
	closed, err := os.MkdirTemp("", "lpgt")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(closed) })
	require.NoError(t, os.Chmod(closed, 0o700))
	dir := filepath.Join(closed, "pg")

	other := runAs{switchUser: true, uid: uint32(os.Geteuid()) + 12345, gid: uint32(os.Getegid()) + 12345}
	// Start checks the data directory's parent, which must exist.
	require.ErrorContains(t, other.checkTraversable(closed), "cannot traverse "+closed)
	require.NoError(t, os.Chmod(closed, 0o711))
	require.NoError(t, other.checkTraversable(closed), "o+x is enough to traverse")
	require.NoError(t, os.Chmod(closed, 0o700))
	require.NoError(t, runAs{}.checkTraversable(closed), "a server that runs as this user needs nothing more")

	if os.Geteuid() == 0 {
		_, err = Start(testCtx(t), Config{Dir: dir})
		require.ErrorContains(t, err, "cannot traverse "+closed)
	}
}

func TestNotAClusterDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(tempRoot(t), "pg")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("x"), 0o644))
	_, err := Start(testCtx(t), Config{Dir: dir})
	require.ErrorContains(t, err, "holds no PostgreSQL cluster")
	require.FileExists(t, filepath.Join(dir, "precious.txt"))
}

func TestDSNQuote(t *testing.T) {
	t.Parallel()
	require.Equal(t, "plain", dsnQuote("plain"))
	require.Equal(t, "''", dsnQuote(""))
	require.Equal(t, `'a b\'c\\d'`, dsnQuote(`a b'c\d`))
	cfg, err := pgx.ParseConfig((&Cluster{dir: "/tmp/with space", database: "o'db"}).URL())
	require.NoError(t, err)
	require.Equal(t, "/tmp/with space", cfg.Host)
	require.Equal(t, "o'db", cfg.Database)
	require.Equal(t, uint16(Port), cfg.Port)
}

func TestVersionLess(t *testing.T) {
	t.Parallel()
	require.True(t, versionLess("9.6", "15"))
	require.True(t, versionLess("15", "16"))
	require.False(t, versionLess("16", "15"))
}

func TestSweepAbandoned(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-time.Hour)
	fake := func(pid int) string {
		root, err := os.MkdirTemp("", tempPrefix)
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(root) })
		require.NoError(t, os.MkdirAll(filepath.Join(root, "pg"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(root, "pg", "PG_VERSION"), []byte("15\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(root, ".pg.lock"), nil, 0o600))
		if pid != 0 {
			require.NoError(t, os.WriteFile(filepath.Join(root, "pg", "postmaster.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o600))
		}
		require.NoError(t, os.Chtimes(root, old, old))
		return root
	}
	dead := fake(0)
	alive := fake(os.Getpid())
	locked := fake(0)
	f, err := lockFile(testCtx(t), filepath.Join(locked, ".pg.lock"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	require.NoError(t, os.Chtimes(locked, old, old))

	sweepAbandoned(slog.New(slog.DiscardHandler))
	require.NoDirExists(t, dead)
	require.DirExists(t, alive, "a running server's directory must stay")
	require.DirExists(t, locked, "a directory being started or stopped must stay")
}

// TestRestartAfterCrash kills the postmaster; its orphaned backends keep the
// shared memory for a moment, which Start must wait out.
func TestRestartAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := filepath.Join(tempRoot(t), "pg")
	cache, _ := DefaultInitCache("")
	for range 2 {
		c, err := Start(ctx, Config{Dir: dir, Fast: true, InitCache: cache})
		require.NoError(t, err)
		require.True(t, c.owned)
		conn := connect(t, c.URL()) // a backend that outlives the postmaster briefly
		_ = conn
		require.NoError(t, c.proc.Signal(syscall.SIGKILL))
		<-c.exited
		require.FileExists(t, filepath.Join(dir, "postmaster.pid"), "a crash leaves a stale postmaster.pid")
	}
	c, err := Start(ctx, Config{Dir: dir, Fast: true, InitCache: cache})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	require.True(t, c.owned)
	require.True(t, reachable(c.URL()))
	require.NoError(t, c.Stop())
}

// TestStartWhileShuttingDown: when the previous owner died and its server is
// still shutting down, Start waits for it and starts its own instead of
// attaching to a server about to vanish.
func TestStartWhileShuttingDown(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := filepath.Join(tempRoot(t), "pg")
	cache, _ := DefaultInitCache("")
	c1, err := Start(ctx, Config{Dir: dir, Fast: true, InitCache: cache})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c1.Stop() })
	conn, err := pgx.Connect(ctx, c1.URL())
	require.NoError(t, err)
	// Smart shutdown waits for the open session and meanwhile refuses
	// new connections.
	require.NoError(t, c1.proc.Signal(syscall.SIGTERM))
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = conn.Close(context.Background())
	}()
	var logs logtest.Buffer
	c2, err := Start(ctx, Config{Dir: dir, Fast: true, InitCache: cache, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Stop() })
	require.True(t, c2.owned, "the new Start must own a fresh server")
	require.Contains(t, logs.String(), "shutting down; waiting to start a new one")
	<-c1.exited
	require.True(t, reachable(c2.URL()))
	require.NoError(t, c2.Stop())
}
