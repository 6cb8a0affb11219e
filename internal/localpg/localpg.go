// Package localpg runs a local PostgreSQL cluster from the PostgreSQL server
// binaries installed on the machine (initdb, pg_ctl, postgres).
//
// It is meant for development (`make run`) and tests: Start creates the
// cluster on first use, starts the server listening on a Unix socket inside
// the data directory only (never on TCP), and creates the application
// database. When the process runs as root, the server runs as the `postgres`
// OS user, because PostgreSQL refuses to run as root.
//
// The server is a child of the calling process. If that process dies without
// calling Stop, the server is asked to shut down (fast mode) on Linux.
package localpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNoBinaries is returned (wrapped) by Start when no PostgreSQL server
// binaries can be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install PostgreSQL (e.g. `apt-get install postgresql`), set CONCLAVE_PG_BIN to their directory, or set DATABASE_URL to use an existing server")

// ErrNoCluster is returned (wrapped) by Start with Existing set when Dir
// holds no initialised cluster.
var ErrNoCluster = errors.New("no PostgreSQL cluster")

// Port is the port number the server uses. There is no TCP listener; the port
// only names the Unix socket file (.s.PGSQL.<Port>).
const Port = 5432

// Config describes a local cluster.
type Config struct {
	// Dir is the cluster's data directory; the Unix socket lives in it too.
	// Defaults to "./.data/pg".
	Dir string
	// BinDir holds initdb, pg_ctl and postgres. Defaults to the first of:
	// $CONCLAVE_PG_BIN, the directory of `initdb` on PATH, the newest
	// /usr/lib/postgresql/*/bin.
	BinDir string
	// Database is created on first start if missing. Defaults to "conclave".
	Database string
	// Existing makes Start use only a cluster already initialised in Dir
	// (running or not): when there is none it creates nothing — no
	// directory, no initdb — and returns an error wrapping ErrNoCluster.
	// For commands that must act on a server's database, never on a new
	// empty one. Defaults to false.
	Existing bool
	// Fast turns off fsync and full_page_writes; for throwaway test clusters
	// only. Defaults to false.
	Fast bool
	// InitCache, when set, is a directory holding a pristine initdb output to
	// copy instead of running initdb; it is filled on first use. Defaults to
	// none. See DefaultInitCache.
	InitCache string
	// Logger receives progress messages. nil discards them.
	Logger *slog.Logger
}

// Cluster is a running local PostgreSQL server, started by Start.
type Cluster struct {
	dir       string
	database  string
	log       *slog.Logger
	owned     bool        // this Cluster started the server and stops it
	removeAll string      // StartTemp: directory removed by Stop
	proc      *os.Process // the postmaster, when owned
	exited    chan struct{}
	waitErr   error // set before exited is closed
	logOffset int64 // size of postgres.log when the server was started

	mu      sync.Mutex
	stopped bool
}

// Start initialises the cluster if Dir has none (initdb once), starts it
// unless it is already running (another process started it — then Stop
// leaves it running), waits until it accepts connections, and creates
// Database if missing.
//
// Concurrent Starts on the same Dir, from any number of processes, are
// serialised with a lock file next to Dir (<parent>/.<base>.lock).
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(".data", "pg")
	}
	if cfg.Database == "" {
		cfg.Database = "conclave"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	if cfg.Existing && !initialized(dir) {
		return nil, fmt.Errorf("localpg: %s: %w", dir, ErrNoCluster)
	}
	if err := checkSocketPath(dir); err != nil {
		return nil, err
	}
	binDir, err := resolveBinDir(cfg.BinDir)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	as, err := currentRunAs()
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("localpg: creating %s: %w", parent, err)
	}
	if err := as.checkTraversable(parent); err != nil {
		return nil, err
	}

	lock, err := lockFile(ctx, filepath.Join(parent, "."+filepath.Base(dir)+".lock"), log)
	if err != nil {
		return nil, err
	}
	defer lock.Close() // releases the flock

	b := bins{dir: binDir, as: as, log: log}
	if cfg.Existing && !initialized(dir) { // removed while we waited for the lock
		return nil, fmt.Errorf("localpg: %s: %w", dir, ErrNoCluster)
	}
	if err := b.ensureInitialized(ctx, dir, cfg.InitCache); err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, database: cfg.Database, log: log}
	if err := c.run(ctx, b, cfg.Fast); err != nil {
		return nil, err
	}
	if err := c.ensureDatabase(ctx); err != nil {
		_ = c.stopServer()
		return nil, err
	}
	log.Info("localpg: ready", "dir", dir, "database", cfg.Database, "started", c.owned)
	return c, nil
}

// StartTemp starts a throwaway cluster in a new short-named temporary
// directory: cfg.Dir is ignored, Fast is forced on, Database defaults to
// "postgres" and InitCache to DefaultInitCache. Stop also deletes the
// directory. Directories of earlier temporary clusters whose process died
// without Stop are deleted on the way.
func StartTemp(ctx context.Context, cfg Config) (*Cluster, error) {
	return startTemp(ctx, cfg, true)
}

// StartTempDurable is StartTemp with the durability of a deployed cluster
// (fsync and full-page writes on, as Start without Fast): for benchmarks
// whose figures must include the cost of making commits durable.
func StartTempDurable(ctx context.Context, cfg Config) (*Cluster, error) {
	return startTemp(ctx, cfg, false)
}

func startTemp(ctx context.Context, cfg Config, fast bool) (*Cluster, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sweepAbandoned(log)
	root, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	// When running as root the server runs as `postgres`, which must be able
	// to traverse the directory; nobody can list it.
	if err := os.Chmod(root, 0o711); err != nil {
		_ = os.RemoveAll(root)
		return nil, fmt.Errorf("localpg: %w", err)
	}
	cfg.Dir = filepath.Join(root, "pg")
	cfg.Fast = fast
	if cfg.Database == "" {
		cfg.Database = "postgres"
	}
	if cfg.InitCache == "" {
		if cache, err := DefaultInitCache(cfg.BinDir); err == nil {
			cfg.InitCache = cache
		}
	}
	c, err := Start(ctx, cfg)
	if err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	c.removeAll = root
	return c, nil
}

// URL is a pgx connection string for Database over the Unix socket, e.g.
// "host=/abs/dir port=5432 user=postgres dbname=conclave sslmode=disable".
func (c *Cluster) URL() string { return c.URLFor(c.database) }

// URLFor is like URL for database db.
func (c *Cluster) URLFor(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable",
		dsnQuote(c.dir), Port, dsnQuote(db))
}

// Dir is the cluster's absolute data directory.
func (c *Cluster) Dir() string { return c.dir }

// Stop shuts the server down (fast mode, as `pg_ctl stop -m fast`) if this
// Cluster started it; a server that was already running when Start was called
// is left running. Stop is safe to call more than once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	if !c.owned {
		return nil
	}
	// Hold the start lock while stopping, so that a concurrent Start in
	// another process does not attach to a server that is going away.
	parent := filepath.Dir(c.dir)
	lock, lockErr := lockFile(context.Background(), filepath.Join(parent, "."+filepath.Base(c.dir)+".lock"), c.log)
	err := c.stopServer()
	if lockErr == nil {
		_ = lock.Close()
	}
	if c.removeAll != "" {
		if rmErr := os.RemoveAll(c.removeAll); rmErr != nil && err == nil {
			err = fmt.Errorf("localpg: removing %s: %w", c.removeAll, rmErr)
		}
	}
	return err
}

// run attaches to the running server or starts one, and waits until it
// accepts connections. Two transient states are waited out: a server that is
// shutting down (its previous owner just exited) and processes of a crashed
// server still holding its shared memory.
func (c *Cluster) run(ctx context.Context, b bins, fast bool) error {
	retryUntil := time.Now().Add(30 * time.Second)
	pause := func() error {
		select {
		case <-ctx.Done():
			return fmt.Errorf("localpg: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
			return nil
		}
	}
	for {
		running, err := b.running(ctx, c.dir)
		if err != nil {
			return err
		}
		if running {
			err := c.waitReady(ctx, b)
			if errors.Is(err, errShuttingDown) && time.Now().Before(retryUntil) {
				c.log.Info("localpg: the running server is shutting down; waiting to start a new one", "dir", c.dir)
				if err := pause(); err != nil {
					return err
				}
				continue
			}
			if errors.Is(err, errShuttingDown) {
				return fmt.Errorf("localpg: the server in %s has been shutting down for a while: %w", c.dir, err)
			}
			if err == nil {
				c.log.Info("localpg: server already running; it will be left running", "dir", c.dir)
			}
			return err
		}

		if err := c.startServer(b, fast); err != nil {
			return err
		}
		err = c.waitReady(ctx, b)
		var exit *startupExitError
		if errors.As(err, &exit) && strings.Contains(exit.log, "pre-existing shared memory block") && time.Now().Before(retryUntil) {
			c.log.Info("localpg: processes of a crashed server still hold its shared memory; retrying", "dir", c.dir)
			c.owned, c.proc = false, nil
			if err := pause(); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			_ = c.stopServer()
		}
		return err
	}
}

// errShuttingDown: a server we did not start is stopping or has stopped.
var errShuttingDown = errors.New("the database system is shutting down")

// startupExitError: a server we started exited before accepting connections.
type startupExitError struct {
	err     error // from Wait
	logPath string
	log     string // what the server logged during this start
}

func (e *startupExitError) Error() string {
	return fmt.Sprintf("localpg: postgres exited during startup (%v); it logged to %s:\n%s", e.err, e.logPath, lastLines(e.log, 15))
}

// startServer runs postgres in the background as a child of this process.
func (c *Cluster) startServer(b bins, fast bool) error {
	logFile, err := os.OpenFile(c.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("localpg: opening server log: %w", err)
	}
	if fi, err := logFile.Stat(); err == nil {
		c.logOffset = fi.Size()
	}
	if err := b.as.chown(c.logPath()); err != nil {
		_ = logFile.Close()
		return err
	}
	args := []string{
		"-D", c.dir,
		"-p", fmt.Sprint(Port),
		"-c", "listen_addresses=",
		"-c", `unix_socket_directories="` + c.dir + `"`,
		"-c", "max_connections=200",
	}
	if fast {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	cmd := b.command("postgres", args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Its own process group: a Ctrl-C at the terminal reaches our process,
	// which decides when to stop the server (after its own shutdown).
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr, syscall.SIGINT)

	c.log.Info("localpg: starting server", "dir", c.dir, "fast", fast)
	c.exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the OS thread that forked the
		// child exits, not the process; keep this goroutine — and so its
		// thread — alive until the server exits. The thread is never
		// unlocked, so it is discarded afterwards.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			_ = logFile.Close()
			started <- err
			return
		}
		started <- nil
		c.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("localpg: starting postgres: %w", err)
	}
	c.proc = cmd.Process
	c.owned = true
	return nil
}

// stopServer stops an owned server: fast shutdown, then immediate, then kill.
func (c *Cluster) stopServer() error {
	if !c.owned || c.proc == nil {
		return nil
	}
	select {
	case <-c.exited:
		c.log.Warn("localpg: server had already exited", "err", c.waitErr)
		return nil
	default:
	}
	c.log.Info("localpg: stopping server", "dir", c.dir)
	steps := []struct {
		sig  os.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, 60 * time.Second},  // fast shutdown
		{syscall.SIGQUIT, 10 * time.Second}, // immediate shutdown
		{syscall.SIGKILL, 10 * time.Second},
	}
	for _, s := range steps {
		_ = c.proc.Signal(s.sig)
		select {
		case <-c.exited:
			return nil
		case <-time.After(s.wait):
			c.log.Warn("localpg: server did not stop in time", "signal", s.sig)
		}
	}
	return fmt.Errorf("localpg: server in %s (pid %d) did not stop", c.dir, c.proc.Pid)
}

// waitReady waits until the server accepts connections. For a server we did
// not start it returns errShuttingDown when that server is going away.
func (c *Cluster) waitReady(ctx context.Context, b bins) error {
	cfg, err := pgx.ParseConfig(c.URLFor("postgres"))
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	cfg.ConnectTimeout = 5 * time.Second
	// A server we started reports its own failure by exiting; crash
	// recovery can take a while, so ctx bounds that wait.
	deadline := time.Now().Add(60 * time.Second)
	var exited <-chan struct{}
	if c.owned {
		deadline = time.Now().Add(10 * time.Minute)
		exited = c.exited
	}
	for {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		var pgErr *pgconn.PgError
		if !c.owned {
			if errors.As(err, &pgErr) && pgErr.Code == "57P03" && strings.Contains(pgErr.Message, "shutting down") {
				return errShuttingDown
			}
			if running, statusErr := b.running(ctx, c.dir); statusErr == nil && !running {
				return errShuttingDown
			}
		}
		select {
		case <-exited:
			return &startupExitError{err: c.waitErr, logPath: c.logPath(), log: readFrom(c.logPath(), c.logOffset)}
		case <-ctx.Done():
			return fmt.Errorf("localpg: waiting for the server in %s: %w (last error: %v)", c.dir, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localpg: server in %s does not accept connections: %w (if no server is running, a stale postmaster.pid may name a reused process id; remove it)", c.dir, err)
		}
	}
}

func (c *Cluster) logPath() string { return filepath.Join(c.dir, "postgres.log") }

// ensureDatabase creates c.database if it does not exist.
func (c *Cluster) ensureDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URLFor("postgres"))
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", c.database).Scan(&exists); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if exists {
		return nil
	}
	c.log.Info("localpg: creating database", "database", c.database)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{c.database}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database
		err = nil
	}
	if err != nil {
		return fmt.Errorf("localpg: creating database %q: %w", c.database, err)
	}
	return nil
}

// initialized reports whether dir holds an initialised cluster.
func initialized(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "PG_VERSION"))
	return err == nil
}

// checkSocketPath fails when the Unix socket path would exceed sun_path.
func checkSocketPath(dir string) error {
	max := 107 // Linux: sizeof(sun_path) 108 minus the terminating NUL
	if runtime.GOOS != "linux" {
		max = 103
	}
	sock := filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", Port))
	if len(sock) > max {
		return fmt.Errorf("localpg: data directory path is too long for a Unix socket: %q is %d bytes, the limit is %d; use a shorter Dir", sock, len(sock), max)
	}
	if strings.ContainsAny(dir, "\",") {
		return fmt.Errorf("localpg: data directory path %q must not contain '\"' or ','", dir)
	}
	return nil
}

// dsnQuote quotes a keyword/value connection string value when needed.
func dsnQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// readFrom returns the contents of path from offset on.
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<40))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lockFile takes an exclusive flock on path, polling so that ctx is honoured.
func lockFile(ctx context.Context, path string, log *slog.Logger) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("localpg: opening lock file: %w", err)
	}
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("localpg: locking %s: %w", path, err)
		}
		if !logged {
			log.Info("localpg: waiting for another process using the cluster", "lock", path)
			logged = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("localpg: waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
