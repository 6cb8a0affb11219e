package modes

import (
	"context"
	"errors"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// Versions reads the released versions of the caller's mode modeRef,
// oldest first, in one trip to the store: each with its release time and
// mode_config_hash but no Spec (Version reads one in full). The mode
// pages list them.
func (s *Service) Versions(ctx context.Context, p *access.Principal, modeRef string) ([]*core.ModeVersion, error) {
	am, err := s.own(ctx, p, modeRef, core.ActionModesRead)
	if err != nil {
		return nil, err
	}
	if am.LatestVersion == 0 {
		return nil, nil
	}
	refs := make([]core.ModeVersionRef, am.LatestVersion)
	for i := range refs {
		refs[i] = core.ModeVersionRef{ModeID: am.ID, Version: i + 1}
	}
	vs, err := s.d.Store.ModeVersions(ctx, refs)
	if err != nil {
		return nil, readFailure(err)
	}
	return vs, nil
}

// Version reads one released version of the caller's mode modeRef with
// its spec: mode_not_found, naming the version, when the mode has no such
// version.
func (s *Service) Version(ctx context.Context, p *access.Principal, modeRef string, version int) (*core.ModeVersion, error) {
	am, err := s.own(ctx, p, modeRef, core.ActionModesRead)
	if err != nil {
		return nil, err
	}
	if version < 1 || version > am.LatestVersion {
		return nil, core.Errorf(core.CodeModeNotFound, "%s has no released version %d.", am.Ticker, version).WithParam("version")
	}
	v, err := s.d.Store.ModeVersion(ctx, am.ID, version)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil, core.Errorf(core.CodeModeNotFound, "%s has no released version %d.", am.Ticker, version).WithParam("version")
	case err != nil:
		return nil, readFailure(err)
	}
	return v, nil
}

// Allows asks the policy whether p may take action (core.ActionModesRelease,
// core.ActionModesList, …) on the caller's mode am, so that a page offers
// only what the person may do; the service asks again when it is done. A
// policy failure answers false.
func (s *Service) Allows(ctx context.Context, p *access.Principal, am *core.AuthoredMode, action string) bool {
	d, err := s.d.Access.Decide(ctx, p, action, modeView(am), "")
	return err == nil && d.Allow
}
