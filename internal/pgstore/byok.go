package pgstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conclavehq/conclave/core"
)

// Bring-your-own-key: organisations' own provider credentials
// (core.ProviderCredentials). The store moves sealed keys and roles only;
// sealing and opening happen in plugins/byok, never here.

//go:embed byok_queries.sql
var byokQueriesSQL string

var byokQueries = parseQueries(byokQueriesSQL)

// bq returns the named query of byok_queries.sql.
func bq(name string) string {
	s, ok := byokQueries[name]
	if !ok {
		panic(fmt.Sprintf("byok_queries.sql has no query %q", name))
	}
	return s
}

// SetProviderCredential implements core.ProviderCredentials.
func (s *Store) SetProviderCredential(ctx context.Context, c *core.ProviderCredential,
) (*core.ProviderCredential, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	var sealed []byte
	var keyID, roleARN, externalID *string
	if c.Provider == core.ProviderAWS {
		roleARN, externalID = &c.RoleARN, &c.ExternalID
	} else {
		sealed, keyID = c.Sealed, &c.KeyID
	}
	// The credential and its audit row: one batch, one round trip.
	var out *core.ProviderCredential
	b := &pgx.Batch{}
	b.Queue(bq("UpsertBYOK"), c.OrgID, c.Provider, sealed, keyID, roleARN, externalID, c.Hint).
		QueryRow(func(row pgx.Row) error {
			var err error
			out, err = scanProviderCredential(row, false)
			return err
		})
	detail := "api key"
	if c.Provider == core.ProviderAWS {
		detail = "role " + c.RoleARN
	}
	queueAudit(ctx, b, c.OrgID, core.AuditBYOKSet, c.Provider, detail)
	// A missing organisation (the foreign key) is core.ErrNotFound.
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, fmt.Errorf("organisation %q: %w", c.OrgID, err)
	}
	return out, nil
}

// ListProviderCredentials implements core.ProviderCredentials.
func (s *Store) ListProviderCredentials(ctx context.Context, orgID string) ([]*core.ProviderCredential, error) {
	rows, err := s.pool.Query(ctx, bq("ListBYOK"), orgID, core.BYOKProviders)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*core.ProviderCredential
	for rows.Next() {
		c, err := scanProviderCredential(rows, false)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

// LookupProviderCredential implements core.ProviderCredentials.
func (s *Store) LookupProviderCredential(ctx context.Context, orgID, provider string,
) (*core.ProviderCredential, error) {
	return scanProviderCredential(s.pool.QueryRow(ctx, bq("LookupBYOK"), orgID, provider), true)
}

// RemoveProviderCredential implements core.ProviderCredentials.
func (s *Store) RemoveProviderCredential(ctx context.Context, orgID, provider string) error {
	a := core.ActorOf(ctx)
	var removed int64
	b := &pgx.Batch{}
	b.Queue(bq("AuditBYOKRemoved"), orgID, provider, a.Kind, a.ID, a.Address)
	b.Queue(bq("RemoveBYOK"), orgID, provider).Exec(func(tag pgconn.CommandTag) error {
		removed = tag.RowsAffected()
		return nil
	})
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return err
	}
	if removed == 0 {
		return core.ErrNotFound
	}
	return nil
}

// AnyProviderCredentials implements core.ProviderCredentials.
func (s *Store) AnyProviderCredentials(ctx context.Context) (bool, error) {
	var exists bool
	err := s.pool.QueryRow(ctx, bq("AnyBYOK")).Scan(&exists)
	return exists, translate(err)
}

func scanProviderCredential(row pgx.Row, withSealed bool) (*core.ProviderCredential, error) {
	var c core.ProviderCredential
	var keyID, roleARN, externalID *string
	dest := []any{&c.OrgID, &c.Provider, &keyID, &roleARN, &externalID, &c.Hint, &c.CreatedAt, &c.UpdatedAt}
	if withSealed {
		dest = append(dest, &c.Sealed)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, translate(err)
	}
	for _, f := range []struct {
		dst *string
		src *string
	}{{&c.KeyID, keyID}, {&c.RoleARN, roleARN}, {&c.ExternalID, externalID}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return &c, nil
}

var _ core.ProviderCredentials = (*Store)(nil)
