package core

import "context"

// ModeSource is where the modes callers name come from. The deployment's
// configuration is the first source (*Catalog); organisations' own modes,
// authored and released into PostgreSQL, are the next. The engine only
// runs the *Mode a source resolved, so a new source changes nothing else.
// Implementations are safe for concurrent use.
type ModeSource interface {
	// ResolveMode finds the mode id names — its slug or ticker, exactly as
	// listed — as the organisation orgID may see it; ErrNotFound when there
	// is none. Whether orgID may call it is the policy's decision, not the
	// source's.
	ResolveMode(ctx context.Context, orgID, id string) (*Mode, error)
	// ListModes lists the modes orgID may see, in a stable order.
	ListModes(ctx context.Context, orgID string) ([]*Mode, error)
	// ModeConfigHash is the mode_config_hash of a mode the source returned:
	// the hash of everything that changes what runs.
	ModeConfigHash(m *Mode) string
}

// ResolveMode resolves a slug or ticker among the configured modes, which
// every organisation sees.
func (c *Catalog) ResolveMode(_ context.Context, _ string, id string) (*Mode, error) {
	if m, ok := c.Resolve(id); ok {
		return m, nil
	}
	return nil, ErrNotFound
}

// ListModes lists the configured modes in configuration order.
func (c *Catalog) ListModes(context.Context, string) ([]*Mode, error) { return c.Modes(), nil }

// ModeConfigHash is the configured mode's mode_config_hash.
func (c *Catalog) ModeConfigHash(m *Mode) string { return c.ConfigHash(m) }

var _ ModeSource = (*Catalog)(nil)
