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

// AuthoredModeSource serves the configured modes and, after them,
// organisations' own modes from a ModeStore: to its owner a mode is its
// latest released version; to every other organisation it is the version
// its approved listing publishes, and nothing before one is published.
// Drafts are never served.
type AuthoredModeSource struct {
	catalog *Catalog
	store   ModeStore
}

// NewAuthoredModeSource serves c's modes and those s keeps.
func NewAuthoredModeSource(c *Catalog, s ModeStore) *AuthoredModeSource {
	return &AuthoredModeSource{catalog: c, store: s}
}

// servedVersion is the version of m that orgID is served; 0 for none.
func servedVersion(m *AuthoredMode, orgID string) int {
	if m.OrgID == orgID {
		return m.LatestVersion
	}
	if m.Listing == ListingApproved {
		return m.PublishedVersion
	}
	return 0
}

// ResolveMode implements ModeSource: a configured mode first, then an
// authored one by its slug or ticker.
func (a *AuthoredModeSource) ResolveMode(ctx context.Context, orgID, id string) (*Mode, error) {
	if m, ok := a.catalog.Resolve(id); ok {
		return m, nil
	}
	am, err := a.store.AuthoredModeByRef(ctx, id)
	if err != nil {
		return nil, err
	}
	return a.version(ctx, am, orgID)
}

func (a *AuthoredModeSource) version(ctx context.Context, am *AuthoredMode, orgID string) (*Mode, error) {
	v := servedVersion(am, orgID)
	if v == 0 {
		return nil, ErrNotFound
	}
	mv, err := a.store.ModeVersion(ctx, am.ID, v)
	if err != nil {
		return nil, err
	}
	return mv.Mode, nil
}

// ListModes implements ModeSource: the configured modes in configuration
// order, then orgID's released modes, then other organisations' published
// ones, each by ticker.
func (a *AuthoredModeSource) ListModes(ctx context.Context, orgID string) ([]*Mode, error) {
	out := append([]*Mode(nil), a.catalog.Modes()...)
	own, err := a.store.ListAuthoredModes(ctx, orgID)
	if err != nil {
		return nil, err
	}
	published, err := a.store.ListPublishedModes(ctx)
	if err != nil {
		return nil, err
	}
	var served []*AuthoredMode
	for _, am := range own {
		if am.LatestVersion > 0 {
			served = append(served, am)
		}
	}
	for _, am := range published {
		if am.OrgID != orgID {
			served = append(served, am)
		}
	}
	for _, am := range served {
		m, err := a.version(ctx, am, orgID)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ModeConfigHash implements ModeSource: a configured mode's hash, or an
// authored mode's worked out over the catalogue's engines — the hash a
// release stores (ReleaseMode.ConfigHash is this function's answer).
func (a *AuthoredModeSource) ModeConfigHash(m *Mode) string {
	if h := a.catalog.ConfigHash(m); h != "" {
		return h
	}
	return m.ConfigHash(a.catalog.Engines())
}

var _ ModeSource = (*AuthoredModeSource)(nil)
