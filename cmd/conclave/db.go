package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/localpg"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// database is an open, migrated database and whatever must be closed after.
type database struct {
	pool    *pgxpool.Pool
	store   *pgstore.Store
	cluster *localpg.Cluster // nil when DATABASE_URL points elsewhere
}

// openDatabase connects to DATABASE_URL, or to the managed local cluster in
// the data directory, and applies migrations. Only serve passes create: it
// may initialise the cluster; every other command uses the one there
// (starting it when no process has) or fails with errNoCluster, so that it
// never acts on an empty database that the server does not see.
func openDatabase(ctx context.Context, cfg *config.Config, log *slog.Logger, create bool) (*database, error) {
	db := &database{}
	url := cfg.Database.URL
	if url == "" {
		c, err := localpg.Start(ctx, localpg.Config{Dir: cfg.ClusterDir(), Existing: !create, Logger: log})
		if err != nil {
			if errors.Is(err, localpg.ErrNoBinaries) {
				return nil, localpg.ErrNoBinaries
			}
			if errors.Is(err, localpg.ErrNoCluster) {
				return nil, errNoCluster(cfg.ClusterDir())
			}
			return nil, fmt.Errorf("starting the local PostgreSQL cluster: %w", err)
		}
		db.cluster = c
		url = c.URL()
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		db.close()
		return nil, fmt.Errorf("parsing the database URL: %w", err)
	}
	pcfg.MaxConns = cfg.Database.MaxConns
	db.pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		db.close()
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	if err := pgstore.Migrate(ctx, db.pool); err != nil {
		db.close()
		return nil, err
	}
	db.store = pgstore.New(db.pool)
	return db, nil
}

// errNoCluster is the one line a command other than serve stops with when
// the data directory holds no cluster: where it looked, and how to point it
// at the server's database.
func errNoCluster(dir string) error {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return fmt.Errorf("no database: no PostgreSQL cluster in %s, and only 'conclave serve' creates one; "+
		"run this where the server runs, give the server's data directory with --data-dir DIR or CONCLAVE_DATA_DIR, "+
		"or set DATABASE_URL", dir)
}

func (db *database) close() {
	if db.pool != nil {
		db.pool.Close()
	}
	if db.cluster != nil {
		_ = db.cluster.Stop() // stops it only if this process started it
	}
}

// configFlags are the flags that find the configuration and the data
// directory: every command that reads the configuration takes them.
type configFlags struct {
	config  *string
	dataDir *string
}

func addConfig(fs *flag.FlagSet) configFlags {
	return configFlags{
		config: fs.String("config", "", "read the configuration `FILE` (YAML) over the built-in one"),
		dataDir: fs.String("data-dir", "", "keep local state in `DIR`: the managed PostgreSQL cluster is DIR/pg "+
			"(env CONCLAVE_DATA_DIR); defaults to data_dir of the configuration, ./.data"),
	}
}

// load reads the configuration; --data-dir overrides the file and the
// environment.
func (f configFlags) load() (*config.Config, error) {
	cfg, err := config.Load(*f.config)
	if err != nil {
		return nil, err
	}
	if *f.dataDir != "" {
		cfg.DataDir = *f.dataDir
	}
	return cfg, nil
}

// commonFlags are the flags every admin command takes.
type commonFlags struct {
	configFlags
	json *bool
}

func addCommon(fs *flag.FlagSet) commonFlags {
	return commonFlags{configFlags: addConfig(fs), json: fs.Bool("json", false, "print the result as JSON")}
}

// withDatabase loads configuration, opens the database (never creating a
// cluster), runs fn, and closes.
func withDatabase(ctx context.Context, cf commonFlags, fn func(*config.Config, *database) error) error {
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg, slog.New(slog.DiscardHandler), false)
	if err != nil {
		return err
	}
	defer db.close()
	return fn(cfg, db)
}

// withStore is withDatabase for a command that needs only the store.
func withStore(ctx context.Context, cf commonFlags, fn func(*pgstore.Store) error) error {
	return withDatabase(ctx, cf, func(_ *config.Config, db *database) error { return fn(db.store) })
}

// withOrgStore is withStore for a command about one organisation: an
// unknown orgID is reported as such before fn runs.
func withOrgStore(ctx context.Context, cf commonFlags, orgID string, fn func(*pgstore.Store) error) error {
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		if _, err := s.GetOrg(ctx, orgID); err != nil {
			return notFound(err, "organisation", orgID)
		}
		return fn(s)
	})
}
