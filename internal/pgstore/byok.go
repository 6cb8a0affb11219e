package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/byok"
)

// Bring-your-own-key: organisations' own provider credentials (see
// plugins/byok). The store moves sealed keys and roles only; sealing and
// opening happen in byok.Sealer, never here.

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

// SetBYOK stores an organisation's credential for a provider, replacing
// the one it had. The record is checked for its shape (a sealed key for an
// API-key provider, a role for aws); an unknown organisation is
// core.ErrNotFound. The result carries no sealed key.
func (s *Store) SetBYOK(ctx context.Context, r *byok.Record) (*byok.Record, error) {
	if r == nil || r.OrgID == "" || !byok.ValidProvider(r.Provider) {
		return nil, errors.New("pgstore: SetBYOK needs an organisation and a known provider")
	}
	var sealed []byte
	var keyID, roleARN, externalID *string
	if r.Provider == byok.AWS {
		if r.RoleARN == "" || r.ExternalID == "" || len(r.Sealed) > 0 {
			return nil, errors.New("pgstore: an aws credential is a role ARN and an external id, with no sealed key")
		}
		roleARN, externalID = &r.RoleARN, &r.ExternalID
	} else {
		if len(r.Sealed) < byok.MinSealedLen || r.KeyID == "" || r.RoleARN != "" || r.ExternalID != "" {
			return nil, fmt.Errorf("pgstore: a %s credential is a sealed key and its key id, with no role", r.Provider)
		}
		sealed, keyID = r.Sealed, &r.KeyID
	}
	out, err := scanBYOK(s.pool.QueryRow(ctx, bq("UpsertBYOK"), r.OrgID, r.Provider, sealed, keyID, roleARN, externalID, r.Hint), false)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation: no such organisation
		return nil, fmt.Errorf("organisation %q: %w", r.OrgID, core.ErrNotFound)
	}
	return out, err
}

// ListBYOK lists an organisation's credentials, without sealed keys, in
// the order of byok.Providers.
func (s *Store) ListBYOK(ctx context.Context, orgID string) ([]*byok.Record, error) {
	rows, err := s.pool.Query(ctx, bq("ListBYOK"), orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*byok.Record
	for rows.Next() {
		r, err := scanBYOK(rows, false)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, translate(rows.Err())
}

// LookupBYOK reads an organisation's credential for one provider, sealed
// key included, for the call path (byok.Lookup). None is core.ErrNotFound.
func (s *Store) LookupBYOK(ctx context.Context, orgID, provider string) (*byok.Record, error) {
	return scanBYOK(s.pool.QueryRow(ctx, bq("LookupBYOK"), orgID, provider), true)
}

// RemoveBYOK deletes an organisation's credential for a provider; none is
// core.ErrNotFound.
func (s *Store) RemoveBYOK(ctx context.Context, orgID, provider string) error {
	tag, err := s.pool.Exec(ctx, bq("RemoveBYOK"), orgID, provider)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return core.ErrNotFound
	}
	return nil
}

// AnyBYOK reports whether any organisation has stored a credential, so that
// a server without the sealing key can say what it is not using.
func (s *Store) AnyBYOK(ctx context.Context) (bool, error) {
	var exists bool
	err := s.pool.QueryRow(ctx, bq("AnyBYOK")).Scan(&exists)
	return exists, translate(err)
}

func scanBYOK(row pgx.Row, withSealed bool) (*byok.Record, error) {
	var r byok.Record
	var keyID, roleARN, externalID *string
	dest := []any{&r.OrgID, &r.Provider, &keyID, &roleARN, &externalID, &r.Hint, &r.CreatedAt, &r.UpdatedAt}
	if withSealed {
		dest = append(dest, &r.Sealed)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, translate(err)
	}
	for _, f := range []struct {
		dst *string
		src *string
	}{{&r.KeyID, keyID}, {&r.RoleARN, roleARN}, {&r.ExternalID, externalID}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return &r, nil
}
