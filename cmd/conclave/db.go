package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

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

// openDatabase connects to DATABASE_URL, or to the managed local cluster
// (starting it when no other process has), and applies migrations.
func openDatabase(ctx context.Context, cfg *config.Config, log *slog.Logger) (*database, error) {
	db := &database{}
	url := cfg.Database.URL
	if url == "" {
		c, err := localpg.Start(ctx, localpg.Config{Dir: cfg.ClusterDir(), Logger: log})
		if err != nil {
			if errors.Is(err, localpg.ErrNoBinaries) {
				return nil, localpg.ErrNoBinaries
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

func (db *database) close() {
	if db.pool != nil {
		db.pool.Close()
	}
	if db.cluster != nil {
		_ = db.cluster.Stop() // stops it only if this process started it
	}
}

// commonFlags are the flags every subcommand that touches the database takes.
type commonFlags struct {
	config *string
	json   *bool
}

func addCommon(fs *flag.FlagSet) commonFlags {
	return commonFlags{
		config: fs.String("config", "", "configuration file (YAML); defaults to the built-in configuration"),
		json:   fs.Bool("json", false, "print the result as JSON"),
	}
}

// withDatabase loads configuration, opens the database, runs fn, and closes.
func withDatabase(ctx context.Context, cf commonFlags, fn func(*config.Config, *database) error) error {
	cfg, err := config.Load(*cf.config)
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg, slog.New(slog.DiscardHandler))
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
