package core

import (
	"context"
	"strconv"
	"strings"
)

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
// organisations' own modes from a ModeStore. A caller names an authored mode
// by its slug or ticker, served as it stands: to its owner the latest
// released version, to every other organisation the version its approved
// listing publishes. A suffix names another version: "@lab" the latest
// release, "@v3" version 3. Every version but the published one is a lab
// version, open to the owner and to the organisations it invited. The
// source resolves what was named and says how it was reached
// (core.ModeReach); whether the caller may run it is the policy's decision.
// Drafts are never served, and configured modes take no suffix.
type AuthoredModeSource struct {
	catalog *Catalog
	store   ModeStore
}

// NewAuthoredModeSource serves c's modes and those s keeps.
func NewAuthoredModeSource(c *Catalog, s ModeStore) *AuthoredModeSource {
	return &AuthoredModeSource{catalog: c, store: s}
}

// servedVersion is the version of m that orgID is served when it names m
// without a suffix; 0 for none.
func servedVersion(m *AuthoredMode, orgID string) int {
	if m.OrgID == orgID {
		return m.LatestVersion
	}
	if m.Listing == ListingApproved {
		return m.PublishedVersion
	}
	return 0
}

// publishes reports whether v is the version m's approved listing serves
// every organisation.
func (m *AuthoredMode) publishes(v int) bool {
	return m.Listing == ListingApproved && m.PublishedVersion == v
}

// SplitModeSuffix splits "acme-panl@v3" into the mode and its suffix
// ("v3"); an id without "@" has none. A suffix is "lab" or "v" and a
// version number; version is that number (0 for "lab" and for none). ok is
// false for any other suffix.
func SplitModeSuffix(id string) (ref, suffix string, version int, ok bool) {
	ref, suffix, found := strings.Cut(id, "@")
	if !found {
		return id, "", 0, true
	}
	if suffix == "lab" {
		return ref, suffix, 0, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(suffix, "v"))
	if !strings.HasPrefix(suffix, "v") || err != nil || n < 1 || strconv.Itoa(n) != suffix[1:] {
		return ref, suffix, 0, false
	}
	return ref, suffix, n, true
}

// ResolveMode implements ModeSource: a configured mode first, then an
// authored one by its slug or ticker and its suffix, if any. A configured
// mode named with a suffix is suffix_not_supported; an unknown suffix, a
// version never released, and a mode never released are ErrNotFound.
func (a *AuthoredModeSource) ResolveMode(ctx context.Context, orgID, id string) (*Mode, error) {
	if m, ok := a.catalog.Resolve(id); ok {
		return m, nil
	}
	ref, suffix, version, ok := SplitModeSuffix(id)
	if !ok {
		return nil, ErrNotFound
	}
	if suffix != "" {
		if _, ok := a.catalog.Resolve(ref); ok {
			return nil, Errorf(CodeSuffixNotSupported, "%s is a configured mode, which has no versions: name it without a suffix.", ref).WithParam("model")
		}
	}
	am, err := a.store.AuthoredModeByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	switch suffix {
	case "":
		version = servedVersion(am, orgID)
		if version == 0 && am.OrgID != orgID {
			// Nothing is published: the caller is answered about the
			// version it would be served once there is one (the policy
			// refuses it: mode_not_published).
			version = am.LatestVersion
		}
	case "lab":
		version = am.LatestVersion
	}
	if version == 0 || version > am.LatestVersion {
		return nil, ErrNotFound
	}
	mv, err := a.store.ModeVersion(ctx, am.ID, version)
	if err != nil {
		return nil, err
	}
	reach := &ModeReach{Suffix: suffix, Listing: am.Listing,
		Published: am.publishes(version)}
	if am.OrgID != orgID && !reach.Published {
		if reach.Invited, err = a.store.LabInvited(ctx, am.ID, orgID); err != nil {
			return nil, err
		}
	}
	return served(mv, reach), nil
}

// served is the copy of a version's mode one caller is given.
func served(mv *ModeVersion, reach *ModeReach) *Mode {
	m := *mv.Mode
	m.Version = mv.Version
	m.Reach = reach
	return &m
}

// ListModes implements ModeSource: the configured modes in configuration
// order, then orgID's released modes, then other organisations' published
// ones, each by ticker. Lab versions are not listed; they are named with a
// suffix.
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
	var listed []*AuthoredMode
	for _, am := range own {
		if am.LatestVersion > 0 {
			listed = append(listed, am)
		}
	}
	for _, am := range published {
		if am.OrgID != orgID && servedVersion(am, orgID) > 0 {
			listed = append(listed, am)
		}
	}
	if len(listed) == 0 {
		return out, nil
	}
	refs := make([]ModeVersionRef, len(listed))
	for i, am := range listed {
		refs[i] = ModeVersionRef{ModeID: am.ID, Version: servedVersion(am, orgID)}
	}
	versions, err := a.store.ModeVersions(ctx, refs)
	if err != nil {
		return nil, err
	}
	for i, mv := range versions {
		am := listed[i]
		out = append(out, served(mv, &ModeReach{Listing: am.Listing,
			Published: am.publishes(mv.Version)}))
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

// ModeVersion is the mode a batch of modeID at version runs: a configured
// mode (version 0) as the catalogue has it, named by its slug, or an
// organisation's released version as the store keeps it. A test run may
// run a configured mode: a key billing its organisation's balance may test
// any mode it can call.
func (a *AuthoredModeSource) ModeVersion(ctx context.Context, modeID string, version int) (*ModeVersion, error) {
	if version == 0 {
		m, ok := a.catalog.Resolve(modeID)
		if !ok || m.OwnerOrg != "" {
			return nil, ErrNotFound
		}
		return &ModeVersion{ModeID: m.ID, Mode: m, ConfigHash: a.catalog.ConfigHash(m)}, nil
	}
	return a.store.ModeVersion(ctx, modeID, version)
}

var _ ModeSource = (*AuthoredModeSource)(nil)
