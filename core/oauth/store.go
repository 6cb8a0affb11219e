package oauth

import (
	"context"
	"time"
)

// RegisteredClient is a client that registered itself (RFC 7591).
type RegisteredClient struct {
	ID string
	Client
	// Address is the client address the registration came from.
	Address      string
	RegisteredAt time.Time
	LastUsedAt   time.Time
}

// ClientStore keeps registered clients. Its methods are safe for
// concurrent use.
type ClientStore interface {
	// RegisterClient stores c (its ID set by the caller).
	RegisterClient(ctx context.Context, c *RegisteredClient) error
	// RegisteredClient finds a client by id; core.ErrNotFound when none.
	RegisteredClient(ctx context.Context, id string) (*RegisteredClient, error)
	// DeleteUnusedClients deletes the clients last used before before and
	// says how many.
	DeleteUnusedClients(ctx context.Context, before time.Time) (int, error)
}
