package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// listingArgs are the flags of the listing review commands.
const listingArgs = "--mode ID|TICKER [--revision N] [--version V] [--json] [--config FILE] [--data-dir DIR]"

type listingJSON struct {
	ModeID           string            `json:"mode_id"`
	Ticker           string            `json:"ticker"`
	OrgID            string            `json:"org_id"`
	Listing          core.ListingState `json:"listing"`
	ListingRevision  int64             `json:"listing_revision"`
	LatestVersion    int               `json:"latest_version"`
	CertifiedVersion int               `json:"certified_version"`
	PublishedVersion int               `json:"published_version"`
}

// listingReview is the operator's review of a listing (approve, reject,
// delist), through the same state machine as every change of a mode. It
// names the listing revision it read — or the one given with --revision,
// so that an operator acting on what a listing looked like earlier is
// refused with listing_changed if it changed since.
func listingReview(kind core.ModeActionKind) func(context.Context, *flag.FlagSet, []string, cmdIO) error {
	return func(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
		cf := addCommon(fs)
		ref := fs.String("mode", "", "the mode, by `ID` (acme-panl) or ticker (ACME:PANL)")
		revision := fs.Int64("revision", 0, "act only if the listing is still at revision `N`; defaults to the revision just read")
		version := fs.Int("version", 0, "approve: the released version reviewed, which becomes the certified and published one (`V`); defaults to the latest release")
		if err := parse(fs, args, "mode"); err != nil {
			return err
		}
		if *version < 0 || (*version != 0 && kind != core.ActionApprove) {
			return usagef("%s: --version names the released version an approval reviews (1, 2, …)", fs.Name())
		}
		return withStore(ctx, cf, func(s *pgstore.Store) error {
			m, err := s.AuthoredModeByRef(ctx, *ref)
			if err != nil {
				return notFound(err, "mode", *ref)
			}
			rev := m.ListingRevision
			if *revision != 0 {
				rev = *revision
			}
			a := core.ModeAction{Kind: kind, ListingRevision: rev}
			if kind == core.ActionApprove {
				a.Version = m.LatestVersion
				if *version != 0 {
					a.Version = *version
				}
			}
			m, err = s.ReviewListing(ctx, m.ID, a)
			if err != nil {
				return err
			}
			out := listingJSON{ModeID: m.ID, Ticker: m.Ticker, OrgID: m.OrgID, Listing: m.Listing, ListingRevision: m.ListingRevision,
				LatestVersion: m.LatestVersion, CertifiedVersion: m.CertifiedVersion, PublishedVersion: m.PublishedVersion}
			return emit(cio.stdout, *cf.json, out, fmt.Sprintf("The listing of %s (%s) is now %s (revision %d).", m.Ticker, m.ID, m.Listing, m.ListingRevision))
		})
	}
}
