package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// ModeStores is what RunModeStore needs of a store: organisations to own
// modes, and the modes.
type ModeStores interface {
	core.Orgs
	core.ModeStore
}

// RunModeStore is the section of core.ModeStore: every transition of the
// lifecycle (docs/modes.md, "Lifecycle") and every code that refuses one,
// name and ticker uniqueness, immutable versions read one or several at a
// time, lab invitations, the cap of modes per organisation, and two
// replicas releasing one draft at once. replica returns a second store over the
// same database as s, through its own connections.
func RunModeStore[S ModeStores](t *testing.T, newStore func(t *testing.T) S, replica func(t *testing.T, s S) S) {
	ctx := context.Background()

	t.Run("Transitions", func(t *testing.T) {
		t.Parallel()
		for _, tc := range lifecycleTable {
			t.Run(tc.start+"/"+tc.action, func(t *testing.T) {
				t.Parallel()
				s, org := newOrg(t, newStore, "Acme")
				m := driveTo(t, s, org.ID, tc.start)
				got, err := lifecycleActions[tc.action](ctx, s, m)
				if tc.code != "" {
					requireCode(t, err, tc.code)
					after, err := s.AuthoredMode(ctx, org.ID, m.ID)
					require.NoError(t, err)
					require.Equal(t, m.ModeState, after.ModeState, "a refused change changes nothing")
					return
				}
				require.NoError(t, err)
				require.Equal(t, tc.want(m.ModeState), got.ModeState)
				after, err := s.AuthoredMode(ctx, org.ID, m.ID)
				require.NoError(t, err)
				require.Equal(t, got.ModeState, after.ModeState, "the change is stored")
			})
		}
	})

	t.Run("EveryLifecycleCodeIsReached", func(t *testing.T) {
		t.Parallel()
		reached := map[core.Code]bool{}
		for _, tc := range lifecycleTable {
			reached[tc.code] = true
		}
		for _, c := range []core.Code{core.CodeDraftRequired, core.CodeDraftPending, core.CodeDraftChanged,
			core.CodeNoDraft, core.CodeDraftUnvalidated, core.CodeModeNotReleased, core.CodeListingRejected,
			core.CodeListingDelisted, core.CodeListingChanged, core.CodePublishedVersionUncertified,
			core.CodeConflict, core.CodeListingRequired, core.CodeModeNotFound} {
			require.True(t, reached[c], "no row of the table reaches %s", c)
		}
	})

	t.Run("NewModes", func(t *testing.T) {
		t.Parallel()
		s, acme := newOrg(t, newStore, "Acme")
		m, err := s.SaveModeDraft(ctx, draft(acme.ID, "Review Panel", "PANL", true))
		require.NoError(t, err)
		require.Equal(t, acme.Ticker+":PANL", m.Ticker)
		require.Equal(t, strings.ToLower(acme.Ticker)+"-panl", m.ID)
		require.Equal(t, acme.ID, m.OrgID)
		require.Equal(t, core.ModeState{DraftRevision: 1, Draft: core.DraftPending, DraftValidated: true, Listing: core.ListingNone}, m.ModeState)
		require.JSONEq(t, string(specJSON("Review Panel", "PANL")), string(m.DraftSpec))

		// name_taken: the organisation's names, in any case; another
		// organisation may use the name.
		_, err = s.SaveModeDraft(ctx, draft(acme.ID, "review panel", "OTHR", true))
		requireCode(t, err, core.CodeNameTaken)
		// ticker_taken: a second mode with the ticker; checked before the
		// name (docs/modes.md).
		_, err = s.SaveModeDraft(ctx, draft(acme.ID, "Another Panel", "PANL", true))
		requireCode(t, err, core.CodeTickerTaken)
		_, err = s.SaveModeDraft(ctx, draft(acme.ID, "Review Panel", "PANL", true))
		requireCode(t, err, core.CodeTickerTaken)
		other := createOrg(t, s, "Other")
		o, err := s.SaveModeDraft(ctx, draft(other.ID, "Review Panel", "PANL", true))
		require.NoError(t, err, "names are unique per organisation, tickers carry the organisation's")
		require.NotEqual(t, m.Ticker, o.Ticker)

		// A draft of an existing mode may rename it, not to a taken name,
		// and may not change its ticker.
		second, err := s.SaveModeDraft(ctx, draft(acme.ID, "Second Panel", "SCND", true))
		require.NoError(t, err)
		p := draft(acme.ID, "Review Panel", "SCND", true)
		p.ModeID, p.BaseRevision = second.ID, second.DraftRevision
		_, err = s.SaveModeDraft(ctx, p)
		requireCode(t, err, core.CodeNameTaken)
		p.Name, p.Ticker = "Second Panel", "XXXX"
		_, err = s.SaveModeDraft(ctx, p)
		requireCode(t, err, core.CodeConflict)
		p.Name, p.Ticker = "Second Panel Renamed", "SCND"
		renamed, err := s.SaveModeDraft(ctx, p)
		require.NoError(t, err)
		require.Equal(t, "Second Panel Renamed", renamed.Name)
		require.Equal(t, int64(2), renamed.DraftRevision)

		// A draft need not pass validation, but needs a ticker and a name.
		_, err = s.SaveModeDraft(ctx, draft(acme.ID, "Lower Panel", "lowr", false))
		requireCode(t, err, core.CodeTickerInvalid)
		_, err = s.SaveModeDraft(ctx, draft(acme.ID, "Short Panel", "SHO", false))
		requireCode(t, err, core.CodeTickerInvalid)
		_, err = s.SaveModeDraft(ctx, draft(acme.ID, "", "NONE", false))
		requireCode(t, err, core.CodeNameTooShort)

		// org_owner_missing: no organisation to own the mode.
		_, err = s.SaveModeDraft(ctx, draft("org_missing", "Orphan Panel", "ORPH", true))
		requireCode(t, err, core.CodeOrgOwnerMissing)

		// mode_not_found: another organisation's mode, or none.
		_, err = s.AuthoredMode(ctx, other.ID, m.ID)
		requireCode(t, err, core.CodeModeNotFound)
		require.ErrorIs(t, err, core.ErrNotFound)
		p = draft(other.ID, "Review Panel", "PANL", true)
		p.ModeID, p.BaseRevision = m.ID, m.DraftRevision
		_, err = s.SaveModeDraft(ctx, p)
		requireCode(t, err, core.CodeModeNotFound)
		_, err = s.ReleaseMode(ctx, release(other.ID, m, panel("sim/a")))
		requireCode(t, err, core.CodeModeNotFound)
		_, err = s.ChangeListing(ctx, other.ID, m.ID, core.ModeAction{Kind: core.ActionRequestListing})
		requireCode(t, err, core.CodeModeNotFound)

		list, err := s.ListAuthoredModes(ctx, acme.ID)
		require.NoError(t, err)
		require.Equal(t, []string{m.Ticker, second.Ticker}, tickers(list), "the organisation's modes, by ticker")
		byRef, err := s.AuthoredModeByRef(ctx, m.Ticker)
		require.NoError(t, err)
		require.Equal(t, m.ID, byRef.ID)
		byRef, err = s.AuthoredModeByRef(ctx, m.ID)
		require.NoError(t, err)
		require.Equal(t, m.Ticker, byRef.Ticker)
		_, err = s.AuthoredModeByRef(ctx, "nope-nope")
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("ReleasedVersionsAreImmutable", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Acme")
		m, err := s.SaveModeDraft(ctx, draft(org.ID, "Review Panel", "PANL", true))
		require.NoError(t, err)
		first := release(org.ID, m, panel("sim/a", "sim/b"))
		v1, err := s.ReleaseMode(ctx, first)
		require.NoError(t, err)
		require.Equal(t, 1, v1.Version)
		require.Equal(t, first.ConfigHash, v1.ConfigHash)
		require.Equal(t, first.Mode, v1.Mode, "the released mode reads back as released")

		// A new draft with a changed panel: version 2, another hash; version
		// 1 reads as it was.
		m, err = s.AuthoredMode(ctx, org.ID, m.ID)
		require.NoError(t, err)
		p := draft(org.ID, "Review Panel", "PANL", true)
		p.ModeID, p.Spec = m.ID, json.RawMessage(`{"name":"Review Panel","ticker":"PANL","max_rounds":3}`)
		m, err = s.SaveModeDraft(ctx, p)
		require.NoError(t, err)
		second := panel("sim/a", "sim/b", "sim/c")
		v2, err := s.ReleaseMode(ctx, release(org.ID, m, second))
		require.NoError(t, err)
		require.Equal(t, 2, v2.Version)
		require.NotEqual(t, v1.ConfigHash, v2.ConfigHash, "the panel changed, so its hash")
		require.JSONEq(t, string(p.Spec), string(v2.Spec), "the version holds the draft it released")

		again, err := s.ModeVersion(ctx, m.ID, 1)
		require.NoError(t, err)
		require.Equal(t, v1.ConfigHash, again.ConfigHash)
		require.Equal(t, first.Mode, again.Mode)
		require.JSONEq(t, string(specJSON("Review Panel", "PANL")), string(again.Spec))
		_, err = s.ModeVersion(ctx, m.ID, 3)
		require.ErrorIs(t, err, core.ErrNotFound)
		got, err := s.AuthoredMode(ctx, org.ID, m.ID)
		require.NoError(t, err)
		require.Equal(t, 2, got.LatestVersion)
	})

	t.Run("ApproveThenCertifyAndPublish", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Acme")
		m := driveTo(t, s, org.ID, "listing-pending")
		list, err := s.ListPublishedModes(ctx)
		require.NoError(t, err)
		require.Empty(t, list, "a pending listing is not in the marketplace")

		// The approval certifies and publishes the version reviewed.
		m, err = s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, Version: 1, ListingRevision: m.ListingRevision})
		require.NoError(t, err)
		require.Equal(t, [2]int{1, 1}, [2]int{m.CertifiedVersion, m.PublishedVersion})
		list, err = s.ListPublishedModes(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{m.Ticker}, tickers(list))

		// A second release is not certified, so not publishable; version 1
		// stays published.
		p := draft(org.ID, "Review Panel", "PANL", true)
		p.ModeID = m.ID
		m, err = s.SaveModeDraft(ctx, p)
		require.NoError(t, err)
		_, err = s.ReleaseMode(ctx, release(org.ID, m, panel("sim/x", "sim/y")))
		require.NoError(t, err)
		m, err = s.AuthoredMode(ctx, org.ID, m.ID)
		require.NoError(t, err)
		_, err = s.ChangeListing(ctx, org.ID, m.ID, core.ModeAction{Kind: core.ActionPublish, Version: 2, ListingRevision: m.ListingRevision})
		requireCode(t, err, core.CodePublishedVersionUncertified)
		require.Equal(t, 1, m.PublishedVersion)

		// A certification run certifies it; the author publishes it.
		m, err = s.RecordCertified(ctx, m.ID, 2)
		require.NoError(t, err)
		require.Equal(t, [2]int{2, 1}, [2]int{m.CertifiedVersion, m.PublishedVersion}, "certifying publishes nothing")
		m, err = s.ChangeListing(ctx, org.ID, m.ID, core.ModeAction{Kind: core.ActionPublish, Version: 2, ListingRevision: m.ListingRevision})
		require.NoError(t, err)
		require.Equal(t, 2, m.PublishedVersion)
		list, err = s.ListPublishedModes(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, 2, list[0].PublishedVersion)

		// Review actions are the operator's, not the author's.
		_, err = s.ChangeListing(ctx, org.ID, m.ID, core.ModeAction{Kind: core.ActionDelist, ListingRevision: m.ListingRevision})
		requireCode(t, err, core.CodeForbidden)
		_, err = s.ChangeListing(ctx, org.ID, m.ID, core.ModeAction{Kind: core.ActionApprove, Version: 2, ListingRevision: m.ListingRevision})
		requireCode(t, err, core.CodeForbidden)
		_, err = s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionPublish, Version: 2, ListingRevision: m.ListingRevision})
		requireCode(t, err, core.CodeInvalidRequest)
		m, err = s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionDelist, ListingRevision: m.ListingRevision})
		require.NoError(t, err)
		require.Equal(t, [2]int{2, 0}, [2]int{m.CertifiedVersion, m.PublishedVersion})
		list, err = s.ListPublishedModes(ctx)
		require.NoError(t, err)
		require.Empty(t, list, "a delisted mode leaves the marketplace")

		// Approved again, at the version the operator reviews now.
		m, err = s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, Version: 1, ListingRevision: m.ListingRevision})
		require.NoError(t, err)
		require.Equal(t, [2]int{1, 1}, [2]int{m.CertifiedVersion, m.PublishedVersion})
		list, err = s.ListPublishedModes(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{m.Ticker}, tickers(list))
	})

	t.Run("ModeVersions", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Acme")
		a := driveTo(t, s, org.ID, "approved+released") // versions 1 and 2
		b, err := s.SaveModeDraft(ctx, draft(org.ID, "Other Panel", "OTHR", true))
		require.NoError(t, err)
		b1, err := s.ReleaseMode(ctx, release(org.ID, b, panel("sim/o", "sim/p")))
		require.NoError(t, err)

		// The versions asked for, in the order asked.
		refs := []core.ModeVersionRef{{ModeID: a.ID, Version: 2}, {ModeID: b.ID, Version: 1}, {ModeID: a.ID, Version: 1}}
		got, err := s.ModeVersions(ctx, refs)
		require.NoError(t, err)
		require.Len(t, got, len(refs))
		for i, r := range refs {
			require.Equal(t, r.ModeID, got[i].ModeID, "answer %d", i)
			require.Equal(t, r.Version, got[i].Version, "answer %d", i)
			one, err := s.ModeVersion(ctx, r.ModeID, r.Version)
			require.NoError(t, err)
			require.Equal(t, one.ConfigHash, got[i].ConfigHash, "answer %d reads as ModeVersion does", i)
			require.Equal(t, one.Mode, got[i].Mode)
		}
		require.Equal(t, b1.ConfigHash, got[1].ConfigHash)

		none, err := s.ModeVersions(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)
		// One version missing is ErrNotFound for the whole answer.
		for _, missing := range []core.ModeVersionRef{{ModeID: a.ID, Version: 3}, {ModeID: "nope-nope", Version: 1}, {ModeID: b.ID, Version: 0}} {
			_, err = s.ModeVersions(ctx, append(append([]core.ModeVersionRef{}, refs...), missing))
			require.ErrorIs(t, err, core.ErrNotFound, "%+v", missing)
		}
	})

	t.Run("LabInvites", func(t *testing.T) {
		t.Parallel()
		s, acme := newOrg(t, newStore, "Acme")
		beta, gamma := createOrg(t, s, "Beta"), createOrg(t, s, "Gamma")
		m := driveTo(t, s, acme.ID, "released")
		invites := func() []string {
			t.Helper()
			got, err := s.LabInvites(ctx, m.ID)
			require.NoError(t, err)
			return got
		}
		invited := func(orgID string) bool {
			t.Helper()
			ok, err := s.LabInvited(ctx, m.ID, orgID)
			require.NoError(t, err)
			return ok
		}
		require.Empty(t, invites())
		require.NotNil(t, invites(), "no invitation is an empty list")
		require.False(t, invited(beta.ID))

		// Invited by ticker; inviting again changes nothing.
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, gamma.Ticker, true))
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, beta.Ticker, true))
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, beta.Ticker, true))
		want := []string{beta.Ticker, gamma.Ticker}
		if want[0] > want[1] {
			want[0], want[1] = want[1], want[0]
		}
		require.Equal(t, want, invites(), "sorted, once each")
		require.True(t, invited(beta.ID))
		require.True(t, invited(gamma.ID))
		require.False(t, invited(acme.ID), "the owner is not invited: it owns the mode")

		// A ticker no other organisation has (none has it, or it is the
		// owner's) is answered as any other and records nothing: an
		// organisation that takes the ticker later is not invited.
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, "ZZZZ", true))
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, acme.Ticker, true))
		require.Equal(t, want, invites())
		require.False(t, invited(acme.ID))
		late, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Zulu", Ticker: "ZZZZ"})
		require.NoError(t, err)
		require.False(t, invited(late.ID), "nothing was recorded for the ticker before its organisation existed")
		require.Equal(t, want, invites())
		// Only the owner invites to its mode.
		err = s.SetLabInvite(ctx, beta.ID, m.ID, gamma.Ticker, false)
		requireCode(t, err, core.CodeModeNotFound)
		err = s.SetLabInvite(ctx, beta.ID, m.ID, beta.Ticker, true)
		requireCode(t, err, core.CodeModeNotFound)
		err = s.SetLabInvite(ctx, acme.ID, "nope-nope", beta.Ticker, true)
		requireCode(t, err, core.CodeModeNotFound)
		require.Equal(t, want, invites())

		// Withdrawn; withdrawing one that does not exist is no error.
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, beta.Ticker, false))
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, beta.Ticker, false))
		require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, "ZZZZ", false))
		require.Equal(t, []string{gamma.Ticker}, invites())
		require.False(t, invited(beta.ID))
		require.True(t, invited(gamma.ID))

		// Invitations belong to one mode.
		other, err := s.SaveModeDraft(ctx, draft(acme.ID, "Other Panel", "OTHR", true))
		require.NoError(t, err)
		got, err := s.LabInvites(ctx, other.ID)
		require.NoError(t, err)
		require.Empty(t, got)
		ok, err := s.LabInvited(ctx, other.ID, gamma.ID)
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("ModesPerOrganisation", func(t *testing.T) {
		t.Parallel()
		s, acme := newOrg(t, newStore, "Acme")
		capped := func(name, ticker string) *core.SaveModeDraft {
			p := draft(acme.ID, name, ticker, false)
			p.MaxModes = 2
			return p
		}
		first, err := s.SaveModeDraft(ctx, capped("First Panel", "FRST"))
		require.NoError(t, err)
		_, err = s.SaveModeDraft(ctx, capped("Second Panel", "SCND"))
		require.NoError(t, err)
		_, err = s.SaveModeDraft(ctx, capped("Third Panel", "THRD"))
		requireCode(t, err, core.CodeConflict)
		require.Contains(t, core.AsError(err).Message, "2 modes")

		// A new draft of a mode it holds is not a new mode; another
		// organisation has its own count; no cap, no refusal.
		p := capped("First Panel Renamed", "FRST")
		p.ModeID, p.BaseRevision = first.ID, first.DraftRevision
		_, err = s.SaveModeDraft(ctx, p)
		require.NoError(t, err)
		other := createOrg(t, s, "Other")
		p = draft(other.ID, "Third Panel", "THRD", false)
		p.MaxModes = 2
		_, err = s.SaveModeDraft(ctx, p)
		require.NoError(t, err)
		_, err = s.SaveModeDraft(ctx, draft(acme.ID, "Third Panel", "THRD", false))
		require.NoError(t, err)
		list, err := s.ListAuthoredModes(ctx, acme.ID)
		require.NoError(t, err)
		require.Len(t, list, 3)

		// Racing new modes, through two replicas, never pass the cap.
		r := replica(t, s)
		race := createOrg(t, s, "Race")
		const racers = 8
		errs := make([]error, racers)
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range racers {
			done.Add(1)
			go func() {
				defer done.Done()
				p := draft(race.ID, fmt.Sprintf("Racing Panel %c", 'A'+i), fmt.Sprintf("RAC%c", 'A'+i), true)
				p.MaxModes = 3
				start.Wait()
				_, errs[i] = []S{s, r}[i%2].SaveModeDraft(ctx, p)
			}()
		}
		start.Done()
		done.Wait()
		saved := 0
		for _, err := range errs {
			if err == nil {
				saved++
				continue
			}
			requireCode(t, err, core.CodeConflict)
		}
		require.Equal(t, 3, saved, "exactly the cap's modes are saved")
		list, err = s.ListAuthoredModes(ctx, race.ID)
		require.NoError(t, err)
		require.Len(t, list, 3)
	})

	t.Run("TwoReplicasReleaseOneDraft", func(t *testing.T) {
		t.Parallel()
		a, org := newOrg(t, newStore, "Acme")
		b := replica(t, a)
		m, err := a.SaveModeDraft(ctx, draft(org.ID, "Review Panel", "PANL", true))
		require.NoError(t, err)
		const rounds = 20
		for round := 1; round <= rounds; round++ {
			stores := []S{a, b}
			errs := make([]error, 2)
			versions := make([]*core.ModeVersion, 2)
			var ready, start sync.WaitGroup
			ready.Add(2)
			start.Add(1)
			var done sync.WaitGroup
			for i := range stores {
				done.Add(1)
				go func(i int) {
					defer done.Done()
					p := release(org.ID, m, panel("sim/a", fmt.Sprintf("sim/r%d-%d", round, i)))
					ready.Done()
					start.Wait()
					versions[i], errs[i] = stores[i].ReleaseMode(ctx, p)
				}(i)
			}
			ready.Wait()
			start.Done()
			done.Wait()

			won := 0
			for i, err := range errs {
				if err == nil {
					won++
					require.Equal(t, round, versions[i].Version)
					continue
				}
				requireCode(t, err, core.CodeDraftChanged)
			}
			require.Equal(t, 1, won, "round %d: exactly one replica releases the draft", round)
			got, err := b.AuthoredMode(ctx, org.ID, m.ID)
			require.NoError(t, err)
			require.Equal(t, round, got.LatestVersion, "one version per release")

			p := draft(org.ID, "Review Panel", "PANL", true)
			p.ModeID, p.BaseRevision = m.ID, got.DraftRevision
			m, err = a.SaveModeDraft(ctx, p)
			require.NoError(t, err)
		}
	})
}

// A lifecycle row: from a named starting state, an action, and the code
// that refuses it ("" when it succeeds, with the state it yields).
type lifecycleRow struct {
	start, action string
	code          core.Code
	want          func(core.ModeState) core.ModeState
}

// The starting states, each reached from a new mode by the author's and
// the operator's actions (driveTo). The operator approves the latest
// release, which is then certified and published.
var lifecycleStarts = map[string][]string{
	"unvalidated":       {"save-unvalidated"},
	"draft":             {"save"},
	"released":          {"save", "release"},
	"released+draft":    {"save", "release", "save-next"},
	"listing-pending":   {"save", "release", "request"},
	"listing-pending+2": {"save", "release", "request", "save-next", "release"},
	"approved":          {"save", "release", "request", "approve"},
	"rejected":          {"save", "release", "request", "reject"},
	"delisted":          {"save", "release", "request", "approve", "delist"},
	"delisted+released": {"save", "release", "request", "approve", "delist", "save-next", "release"},
	"approved+released": {"save", "release", "request", "approve", "save-next", "release"},
	"certified-2":       {"save", "release", "request", "approve", "save-next", "release", "certify-2"},
}

var lifecycleTable = []lifecycleRow{
	// Drafts.
	{"draft", "save-replacing", "", func(s core.ModeState) core.ModeState {
		s.DraftRevision++
		return s
	}},
	{"draft", "save-new", core.CodeDraftPending, nil},
	{"released+draft", "save-stale", core.CodeDraftChanged, nil},
	{"released", "save-new", "", func(s core.ModeState) core.ModeState {
		s.DraftRevision++
		s.Draft = core.DraftPending
		return s
	}},
	{"released", "save-stale", core.CodeDraftChanged, nil},
	{"unvalidated", "save-replacing", "", func(s core.ModeState) core.ModeState {
		s.DraftRevision++
		s.DraftValidated = true
		return s
	}},
	// Releases.
	{"draft", "release", "", func(s core.ModeState) core.ModeState {
		s.DraftRevision++
		s.Draft = core.DraftReleased
		s.LatestVersion = 1
		return s
	}},
	{"released+draft", "release", "", func(s core.ModeState) core.ModeState {
		s.DraftRevision++
		s.Draft = core.DraftReleased
		s.LatestVersion = 2
		return s
	}},
	{"draft", "release-unnamed", core.CodeDraftRequired, nil},
	{"draft", "release-stale", core.CodeDraftChanged, nil},
	{"released", "release", core.CodeNoDraft, nil},
	{"unvalidated", "release", core.CodeDraftUnvalidated, nil},
	{"draft", "release-other-org", core.CodeModeNotFound, nil},
	// The author's listing request.
	{"released", "request", "", listing(core.ListingPending)},
	{"released+draft", "request", "", listing(core.ListingPending)},
	{"draft", "request", core.CodeModeNotReleased, nil},
	{"rejected", "request", core.CodeListingRejected, nil},
	{"delisted", "request", core.CodeListingDelisted, nil},
	{"listing-pending", "request", core.CodeConflict, nil},
	{"approved", "request", core.CodeConflict, nil},
	{"released", "request-stale", core.CodeListingChanged, nil},
	// The operator's review. Approval names the version reviewed, which
	// becomes the certified and the published version.
	{"listing-pending", "approve", "", approved(1)},
	{"listing-pending+2", "approve", "", approved(2)},
	{"listing-pending+2", "approve-1", "", approved(1)},
	{"rejected", "approve", "", approved(1)},
	{"delisted", "approve", "", approved(1)},
	{"delisted+released", "approve", "", approved(2)},
	{"listing-pending", "approve-0", core.CodeModeNotFound, nil},
	{"listing-pending", "approve-next", core.CodeModeNotFound, nil},
	{"listing-pending", "reject", "", listing(core.ListingRejected)},
	{"approved", "delist", "", func(s core.ModeState) core.ModeState {
		s = listing(core.ListingDelisted)(s)
		s.PublishedVersion = 0
		return s
	}},
	{"certified-2", "delist", "", func(s core.ModeState) core.ModeState {
		s = listing(core.ListingDelisted)(s)
		s.PublishedVersion = 0
		return s
	}},
	{"released", "approve", core.CodeConflict, nil},
	{"approved", "approve", core.CodeConflict, nil},
	{"approved", "reject", core.CodeConflict, nil},
	{"listing-pending", "delist", core.CodeConflict, nil},
	{"listing-pending", "approve-stale", core.CodeListingChanged, nil},
	// Certification: a released version of an approved listing; it
	// publishes nothing.
	{"approved+released", "certify-2", "", func(s core.ModeState) core.ModeState {
		s.CertifiedVersion = 2
		s.ListingRevision++
		return s
	}},
	{"approved", "certify-1", "", func(s core.ModeState) core.ModeState {
		s.ListingRevision++
		return s
	}},
	{"draft", "certify-1", core.CodeModeNotReleased, nil},
	{"approved", "certify-2", core.CodeModeNotFound, nil},
	{"released", "certify-1", core.CodeListingRequired, nil},
	{"listing-pending", "certify-1", core.CodeListingRequired, nil},
	{"rejected", "certify-1", core.CodeListingRejected, nil},
	{"delisted", "certify-1", core.CodeListingDelisted, nil},
	// Publishing: the certified version of an approved listing. The version
	// approved stays published until the author publishes a newer
	// certified one.
	{"certified-2", "publish-2", "", func(s core.ModeState) core.ModeState {
		s.PublishedVersion = 2
		s.ListingRevision++
		return s
	}},
	{"approved+released", "publish-2", core.CodePublishedVersionUncertified, nil},
	{"certified-2", "publish-1", core.CodePublishedVersionUncertified, nil},
	{"certified-2", "publish-2-stale", core.CodeListingChanged, nil},
	{"released", "publish-1", core.CodeListingRequired, nil},
	{"rejected", "publish-1", core.CodeListingRejected, nil},
	{"delisted", "publish-1", core.CodeListingDelisted, nil},
}

// approved returns the state change of an approval of version v.
func approved(v int) func(core.ModeState) core.ModeState {
	return func(s core.ModeState) core.ModeState {
		s = listing(core.ListingApproved)(s)
		s.CertifiedVersion, s.PublishedVersion = v, v
		return s
	}
}

// listing returns the state change of a listing review or request.
func listing(l core.ListingState) func(core.ModeState) core.ModeState {
	return func(s core.ModeState) core.ModeState {
		s.Listing = l
		s.ListingRevision++
		return s
	}
}

type lifecycleAction func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error)

// lifecycleActions are the table's actions on a mode as last read.
var lifecycleActions = map[string]lifecycleAction{
	"save":             saveAction(true, 0),
	"save-unvalidated": saveAction(false, 0),
	"save-next":        saveAction(true, 0),
	"save-new":         saveAction(true, 0),
	"save-replacing": func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		return saveAction(true, m.DraftRevision)(ctx, s, m)
	},
	"save-stale": func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		return saveAction(true, m.DraftRevision-1)(ctx, s, m)
	},
	"release":           releaseAction(func(m *core.AuthoredMode) int64 { return m.DraftRevision }, false),
	"release-unnamed":   releaseAction(func(*core.AuthoredMode) int64 { return 0 }, false),
	"release-stale":     releaseAction(func(m *core.AuthoredMode) int64 { return m.DraftRevision + 1 }, false),
	"release-other-org": releaseAction(func(m *core.AuthoredMode) int64 { return m.DraftRevision }, true),
	"request":           listingAction(core.ActionRequestListing, 0, 0),
	"request-stale":     listingAction(core.ActionRequestListing, 0, 1),
	"publish-1":         listingAction(core.ActionPublish, 1, 0),
	"publish-2":         listingAction(core.ActionPublish, 2, 0),
	"publish-2-stale":   listingAction(core.ActionPublish, 2, -1),
	"approve":           approveAction(func(m *core.AuthoredMode) int { return m.LatestVersion }, 0),
	"approve-1":         approveAction(func(*core.AuthoredMode) int { return 1 }, 0),
	"approve-0":         approveAction(func(*core.AuthoredMode) int { return 0 }, 0),
	"approve-next":      approveAction(func(m *core.AuthoredMode) int { return m.LatestVersion + 1 }, 0),
	"approve-stale":     approveAction(func(m *core.AuthoredMode) int { return m.LatestVersion }, 1),
	"reject":            reviewAction(core.ActionReject, 0),
	"delist":            reviewAction(core.ActionDelist, 0),
	"certify-1":         certifyAction(1),
	"certify-2":         certifyAction(2),
}

func saveAction(validated bool, base int64) lifecycleAction {
	return func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		p := draft(m.OrgID, "Review Panel", "PANL", validated)
		if m.ID != "" {
			p.ModeID, p.BaseRevision = m.ID, base
		}
		return s.SaveModeDraft(ctx, p)
	}
}

// releaseAction releases the draft at the revision rev names; otherOrg
// releases it as an organisation that does not own it.
func releaseAction(rev func(*core.AuthoredMode) int64, otherOrg bool) lifecycleAction {
	return func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		orgID := m.OrgID
		if otherOrg {
			orgID = "org_intruder"
		}
		p := release(orgID, m, panel("sim/a", fmt.Sprintf("sim/v%d", m.LatestVersion+1)))
		p.Revision = rev(m)
		if _, err := s.ReleaseMode(ctx, p); err != nil {
			return nil, err
		}
		return s.AuthoredMode(ctx, m.OrgID, m.ID)
	}
}

// listingAction is the author's; skew is added to the listing revision read.
func listingAction(kind core.ModeActionKind, version int, skew int64) lifecycleAction {
	return func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		return s.ChangeListing(ctx, m.OrgID, m.ID, core.ModeAction{Kind: kind, Version: version, ListingRevision: m.ListingRevision + skew})
	}
}

// reviewAction is the operator's reject or delist; skew is added to the
// listing revision read.
func reviewAction(kind core.ModeActionKind, skew int64) lifecycleAction {
	return func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		return s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: kind, ListingRevision: m.ListingRevision + skew})
	}
}

// approveAction is the operator's approval of the version version names.
func approveAction(version func(*core.AuthoredMode) int, skew int64) lifecycleAction {
	return func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		return s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, Version: version(m), ListingRevision: m.ListingRevision + skew})
	}
}

func certifyAction(version int) lifecycleAction {
	return func(ctx context.Context, s ModeStores, m *core.AuthoredMode) (*core.AuthoredMode, error) {
		return s.RecordCertified(ctx, m.ID, version)
	}
}

// driveTo creates orgID's mode and brings it to the named starting state.
func driveTo(t *testing.T, s ModeStores, orgID, start string) *core.AuthoredMode {
	t.Helper()
	steps, ok := lifecycleStarts[start]
	require.True(t, ok, "no starting state %q", start)
	m := &core.AuthoredMode{OrgID: orgID}
	for _, step := range steps {
		next, err := lifecycleActions[step](context.Background(), s, m)
		require.NoError(t, err, "%s: step %s", start, step)
		m = next
	}
	return m
}

func specJSON(name, ticker string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"name": name, "ticker": ticker})
	return b
}

func draft(orgID, name, ticker string, validated bool) *core.SaveModeDraft {
	return &core.SaveModeDraft{OrgID: orgID, Name: name, Ticker: ticker, Spec: specJSON(name, ticker), Validated: validated}
}

// release releases m's draft at the revision last read, as panel.
func release(orgID string, m *core.AuthoredMode, panel *core.Mode) *core.ReleaseMode {
	p := *panel
	p.ID, p.Ticker, p.OwnerOrg = m.ID, m.Ticker, m.OrgID
	return &core.ReleaseMode{OrgID: orgID, ModeID: m.ID, Revision: m.DraftRevision, Mode: &p, ConfigHash: p.ConfigHash(nil)}
}

// panel is a mode seating engines at plus: what the store keeps is not
// checked against a catalogue, only kept.
func panel(engines ...string) *core.Mode {
	row := make([]core.Seat, len(engines))
	for i, e := range engines {
		row[i] = core.Seat{Engine: e}
	}
	surcharge := core.Micros(50_000)
	return &core.Mode{
		Key: "panl", Name: "Review Panel", IncludesDeliberation: true,
		Deliberation: core.Deliberation{
			Seats:    map[core.Tier][]core.Seat{core.TierPlus: row},
			Staff:    map[string]core.Staff{"judge": {Engine: engines[0]}},
			Critique: core.CritiqueDeep, MaxRounds: 2, CostCeiling: 1_000_000,
		},
		Pricing: core.Pricing{Surcharge: &surcharge, SurchargeByDepth: map[core.Depth]core.Micros{core.DepthLight: 50_000}},
	}
}

func requireCode(t *testing.T, err error, code core.Code) {
	t.Helper()
	require.Error(t, err, "want %s", code)
	require.Equal(t, code, core.AsError(err).Code, "%v", err)
}

func tickers(ms []*core.AuthoredMode) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Ticker
	}
	return out
}
