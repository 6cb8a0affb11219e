package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/conclavehq/conclave/core/oauth"
)

// RegisterClient implements oauth.ClientStore.
func (s *Store) RegisterClient(ctx context.Context, c *oauth.RegisteredClient) error {
	meta, err := json.Marshal(&c.ClientMetadata)
	if err != nil {
		return fmt.Errorf("encoding client %s: %w", c.ID, err)
	}
	err = s.pool.QueryRow(ctx, `INSERT INTO oauth_clients (id, metadata, native, address) VALUES ($1, $2, $3, $4)
		RETURNING registered_at, last_used_at`, c.ID, meta, c.Native, c.Address).Scan(&c.RegisteredAt, &c.LastUsedAt)
	return translate(err)
}

// RegisteredClient implements oauth.ClientStore.
func (s *Store) RegisteredClient(ctx context.Context, id string) (*oauth.RegisteredClient, error) {
	c := &oauth.RegisteredClient{ID: id}
	var meta []byte
	err := s.pool.QueryRow(ctx, `SELECT metadata, native, address, registered_at, last_used_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&meta, &c.Native, &c.Address, &c.RegisteredAt, &c.LastUsedAt)
	if err != nil {
		return nil, translate(err)
	}
	if err := json.Unmarshal(meta, &c.ClientMetadata); err != nil {
		return nil, fmt.Errorf("reading client %s: %w", id, err)
	}
	return c, nil
}

// DeleteUnusedClients implements oauth.ClientStore.
func (s *Store) DeleteUnusedClients(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM oauth_clients WHERE last_used_at < $1`, before)
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}

var _ oauth.ClientStore = (*Store)(nil)
