package pgstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conclavehq/conclave/core"
)

// Organisations' own modes (core.ModeStore). Every change reads the mode's
// state, asks core.ModeState.Apply for the next one, and writes it with a
// conditional UPDATE that holds only if the mode is still at both revisions
// it was read at. Of two writers that read the same state, the second's
// UPDATE waits for the first's transaction and then matches no row; it
// reads the state again and applies its action again, which now refuses it
// (a release of a revision already released: draft_changed) — the same
// rule, in the same Go function, as a writer that read late.

//go:embed modes_queries.sql
var modesQueriesSQL string

var modesQueries = parseQueries(modesQueriesSQL)

// mq returns the named query of modes_queries.sql.
func mq(name string) string {
	s, ok := modesQueries[name]
	if !ok {
		panic(fmt.Sprintf("modes_queries.sql has no query %q", name))
	}
	return s
}

// maxStateRetries bounds how often a change whose conditional write lost
// is applied again to the state that won. Each retry follows another
// writer's committed change; a real conflict is refused by Apply itself.
const maxStateRetries = 8

func modeNotFound(id string) error {
	return core.Errorf(core.CodeModeNotFound, "no mode %q in your organisation", id).WithCause(core.ErrNotFound)
}

func scanAuthoredMode(row pgx.Row) (*core.AuthoredMode, error) {
	m, err := scanAuthoredModeRaw(row)
	return m, translate(err)
}

// scanAuthoredModeRaw returns the driver's error as it came, for
// modeWriteError to read its constraint.
func scanAuthoredModeRaw(row pgx.Row) (*core.AuthoredMode, error) {
	var m core.AuthoredMode
	var spec []byte
	if err := row.Scan(authoredModeDest(&m, &spec)...); err != nil {
		return nil, err
	}
	m.DraftSpec = json.RawMessage(spec)
	return &m, nil
}

// scanListedMode reads a listing's row: every column but the draft's spec,
// which can be as large as a spec may be and which no listing shows; the
// mode's DraftSpec is nil.
func scanListedMode(row pgx.Row) (*core.AuthoredMode, error) {
	var m core.AuthoredMode
	if err := row.Scan(authoredModeDest(&m, nil)...); err != nil {
		return nil, translate(err)
	}
	return &m, nil
}

// authoredModeDest is where an authored_modes row is read into, in the
// queries' column order; spec nil leaves out the draft's spec.
func authoredModeDest(m *core.AuthoredMode, spec *[]byte) []any {
	dest := []any{&m.ID, &m.OrgID, &m.Ticker, &m.Name, &m.DraftRevision, &m.Draft, &m.DraftValidated,
		&m.LatestVersion, &m.Listing, &m.ListingRevision, &m.CertifiedVersion, &m.PublishedVersion}
	if spec != nil {
		dest = append(dest, spec)
	}
	return append(dest, &m.DraftSavedAt, &m.CreatedAt)
}

func scanModeVersion(row pgx.Row) (*core.ModeVersion, error) {
	var spec []byte
	v, err := scanVersion(row, &spec)
	if err != nil {
		return nil, err
	}
	v.Spec = json.RawMessage(spec)
	return v, nil
}

// scanListedVersion reads a version for the listing of modes: its mode,
// not its spec (nil).
func scanListedVersion(row pgx.Row) (*core.ModeVersion, error) { return scanVersion(row, nil) }

// scanVersion reads a mode_versions row; spec nil leaves out the spec.
func scanVersion(row pgx.Row, spec *[]byte) (*core.ModeVersion, error) {
	var v core.ModeVersion
	var mode []byte
	dest := []any{&v.ModeID, &v.Version}
	if spec != nil {
		dest = append(dest, spec)
	}
	if err := row.Scan(append(dest, &mode, &v.ConfigHash, &v.ReleasedAt)...); err != nil {
		return nil, translate(err)
	}
	v.Mode = new(core.Mode)
	if err := json.Unmarshal(mode, v.Mode); err != nil {
		return nil, fmt.Errorf("pgstore: mode version %s/%d: %w", v.ModeID, v.Version, err)
	}
	return &v, nil
}

// modeWriteError turns the schema's refusals of a mode write into the
// lifecycle's codes.
func modeWriteError(err error, ticker, name string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505" && (pgErr.ConstraintName == "authored_modes_ticker" || pgErr.ConstraintName == "authored_modes_pkey"):
			return core.Errorf(core.CodeTickerTaken, "the ticker %s is in use", ticker).WithParam("ticker").WithCause(core.ErrConflict)
		case pgErr.Code == "23505" && pgErr.ConstraintName == "authored_modes_org_name":
			return core.Errorf(core.CodeNameTaken, "your organisation already has a mode named %q", name).WithParam("name").WithCause(core.ErrConflict)
		// A draft need not pass validation, but the mode's identity must
		// hold: the checks validation makes of the ticker and the name.
		case pgErr.Code == "23514" && (pgErr.ConstraintName == "authored_modes_ticker_check" || pgErr.ConstraintName == "authored_modes_id_check"):
			return core.Errorf(core.CodeTickerInvalid, "the ticker is exactly four letters A to Z").WithParam("ticker")
		case pgErr.Code == "23514" && pgErr.ConstraintName == "authored_modes_name_check":
			return core.Errorf(core.CodeNameTooShort, "the mode needs a name").WithParam("name")
		// program_limit_exceeded: the name is too long for the index of
		// names (about 2,700 bytes), which only a policy without the name
		// rules lets through.
		case pgErr.Code == "54000":
			return core.Errorf(core.CodeNameTooLong, "the name is too long to store").WithParam("name")
		}
	}
	return translate(err)
}

// SaveModeDraft implements core.ModeStore.
func (s *Store) SaveModeDraft(ctx context.Context, p *core.SaveModeDraft) (*core.AuthoredMode, error) {
	if p.ModeID == "" {
		return s.createAuthoredMode(ctx, p)
	}
	return s.changeMode(ctx, p.OrgID, p.ModeID, func(m *core.AuthoredMode) (*modeWrite, error) {
		if p.Ticker != "" && m.Ticker != sameOrgTicker(m, p.Ticker) {
			return nil, core.Errorf(core.CodeConflict, "the mode's ticker is %s; a draft cannot change it", m.Ticker).WithParam("ticker")
		}
		next, err := m.Apply(core.ModeAction{Kind: core.ActionSave, Revision: p.BaseRevision, Validated: p.Validated})
		if err != nil {
			return nil, err
		}
		return &modeWrite{state: next, saved: true, name: p.Name, spec: p.Spec,
			audit: core.AuditModeDrafted, detail: fmt.Sprintf("draft %d", next.DraftRevision)}, nil
	})
}

// sameOrgTicker is the full ticker of the mode part t in m's organisation.
func sameOrgTicker(m *core.AuthoredMode, t string) string {
	org, _, _ := strings.Cut(m.Ticker, ":")
	return org + ":" + t
}

func (s *Store) createAuthoredMode(ctx context.Context, p *core.SaveModeDraft) (*core.AuthoredMode, error) {
	next, err := core.ModeState{}.Apply(core.ModeAction{Kind: core.ActionSave, Revision: p.BaseRevision, Validated: p.Validated})
	if err != nil {
		return nil, err
	}
	var out *core.AuthoredMode
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		var orgTicker string
		if err := tx.QueryRow(ctx, mq("OrgTicker"), p.OrgID).Scan(&orgTicker); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return core.Errorf(core.CodeOrgOwnerMissing, "no organisation %q to own the mode", p.OrgID)
			}
			return translate(err)
		}
		if p.MaxModes > 0 {
			var held int
			if err := tx.QueryRow(ctx, mq("CountAuthoredModes"), p.OrgID).Scan(&held); err != nil {
				return translate(err)
			}
			if held >= p.MaxModes {
				return core.Errorf(core.CodeConflict, "Your organisation holds %d modes, and may hold at most %d; nothing was saved. "+
					"Modes are not deleted: save this spec as a new draft of one of your modes (name it in mode_id), "+
					"or ask the operator to raise the limit.", held, p.MaxModes)
			}
		}
		ticker := orgTicker + ":" + p.Ticker
		id := strings.ToLower(orgTicker) + "-" + strings.ToLower(p.Ticker)
		// The mode and its audit row: one batch, one round trip.
		b := &pgx.Batch{}
		b.Queue(mq("InsertAuthoredMode"), id, p.OrgID, ticker, p.Name,
			next.DraftRevision, next.Draft, next.DraftValidated, []byte(p.Spec), next.Listing).QueryRow(func(row pgx.Row) error {
			var err error
			out, err = scanAuthoredModeRaw(row)
			return err
		})
		queueAudit(ctx, b, p.OrgID, core.AuditModeDrafted, id, fmt.Sprintf("new mode %s, draft %d", ticker, next.DraftRevision))
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return modeWriteError(err, ticker, p.Name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: saving mode %s: %w", p.Ticker, err)
	}
	return out, nil
}

// modeWrite is what a change writes: the next state, and for a save the
// draft's name and spec.
type modeWrite struct {
	state core.ModeState
	saved bool
	name  string
	spec  json.RawMessage
	// after runs in the same transaction once the state is written.
	after func(tx pgx.Tx, m *core.AuthoredMode) error
	// audit and detail are the change's audit row ("" writes none: the
	// system's own steps, such as recording a certification).
	audit, detail string
}

// errLostWrite rolls back a mode change whose conditional write found the
// mode changed by another writer (its audit row with it); it is retried.
var errLostWrite = errors.New("the mode changed since it was read")

// changeMode reads orgID's mode (any organisation's when orgID is ""),
// asks change for the write, and makes it conditionally; a lost write is
// applied again to the state that won.
func (s *Store) changeMode(ctx context.Context, orgID, modeID string, change func(m *core.AuthoredMode) (*modeWrite, error)) (*core.AuthoredMode, error) {
	for attempt := 0; attempt < maxStateRetries; attempt++ {
		var out *core.AuthoredMode
		err := s.InTx(ctx, func(tx pgx.Tx) error {
			m, err := scanAuthoredMode(tx.QueryRow(ctx, mq("AuthoredModeByID"), modeID))
			if errors.Is(err, core.ErrNotFound) || (err == nil && orgID != "" && m.OrgID != orgID) {
				return modeNotFound(modeID)
			}
			if err != nil {
				return err
			}
			if s.afterModeRead != nil {
				s.afterModeRead()
			}
			w, err := change(m)
			if err != nil {
				return err
			}
			name, spec := m.Name, m.DraftSpec
			if w.saved {
				name, spec = w.name, w.spec
			}
			n := w.state
			// The write and its audit row: one batch, one round trip.
			var got *core.AuthoredMode
			b := &pgx.Batch{}
			b.Queue(mq("UpdateAuthoredMode"), m.ID, m.DraftRevision, m.ListingRevision,
				n.DraftRevision, n.Draft, n.DraftValidated, n.LatestVersion, n.Listing, n.ListingRevision,
				n.CertifiedVersion, n.PublishedVersion, w.saved, name, []byte(spec)).QueryRow(func(row pgx.Row) error {
				var err error
				got, err = scanAuthoredModeRaw(row)
				return err
			})
			if w.audit != "" {
				queueAudit(ctx, b, m.OrgID, w.audit, m.ID, w.detail)
			}
			err = tx.SendBatch(ctx, b).Close()
			if errors.Is(err, pgx.ErrNoRows) {
				s.lostModeWrites.Add(1)
				return errLostWrite // another writer changed the mode since it was read
			}
			if err != nil {
				return modeWriteError(err, m.Ticker, name)
			}
			if w.after != nil {
				if err := w.after(tx, got); err != nil {
					return err
				}
			}
			out = got
			return nil
		})
		if errors.Is(err, errLostWrite) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pgstore: mode %s: %w", modeID, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("pgstore: mode %s: %w", modeID,
		core.Errorf(core.CodeConflict, "the mode kept changing while written; read it again"))
}

// ReleaseMode implements core.ModeStore.
func (s *Store) ReleaseMode(ctx context.Context, p *core.ReleaseMode) (*core.ModeVersion, error) {
	if p.Mode == nil || p.ConfigHash == "" {
		return nil, fmt.Errorf("pgstore: releasing %s: the release carries no mode or no hash", p.ModeID)
	}
	mode, err := json.Marshal(p.Mode)
	if err != nil {
		return nil, fmt.Errorf("pgstore: releasing %s: %w", p.ModeID, err)
	}
	var v *core.ModeVersion
	_, err = s.changeMode(ctx, p.OrgID, p.ModeID, func(m *core.AuthoredMode) (*modeWrite, error) {
		next, err := m.Apply(core.ModeAction{Kind: core.ActionRelease, Revision: p.Revision})
		if err != nil {
			return nil, err
		}
		return &modeWrite{state: next, audit: core.AuditModeReleased, detail: fmt.Sprintf("version %d", next.LatestVersion),
			after: func(tx pgx.Tx, got *core.AuthoredMode) error {
				v, err = scanModeVersion(tx.QueryRow(ctx, mq("InsertModeVersion"), got.ID, got.LatestVersion, mode, p.ConfigHash))
				return err
			}}, nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// AuthoredMode implements core.ModeStore.
func (s *Store) AuthoredMode(ctx context.Context, orgID, modeID string) (*core.AuthoredMode, error) {
	m, err := scanAuthoredMode(s.pool.QueryRow(ctx, mq("AuthoredModeByID"), modeID))
	if errors.Is(err, core.ErrNotFound) || (err == nil && m.OrgID != orgID) {
		return nil, modeNotFound(modeID)
	}
	return m, err
}

// AuthoredModeByRef implements core.ModeStore.
func (s *Store) AuthoredModeByRef(ctx context.Context, ref string) (*core.AuthoredMode, error) {
	return scanAuthoredMode(s.pool.QueryRow(ctx, mq("AuthoredModeByRef"), ref))
}

// ModeVersion implements core.ModeStore.
func (s *Store) ModeVersion(ctx context.Context, modeID string, version int) (*core.ModeVersion, error) {
	return scanModeVersion(s.pool.QueryRow(ctx, mq("ModeVersion"), modeID, version))
}

// ModeVersions implements core.ModeStore.
func (s *Store) ModeVersions(ctx context.Context, refs []core.ModeVersionRef) ([]*core.ModeVersion, error) {
	ids := make([]string, len(refs))
	versions := make([]int32, len(refs))
	for i, r := range refs {
		ids[i], versions[i] = r.ModeID, int32(r.Version)
	}
	rows, err := s.pool.Query(ctx, mq("ModeVersions"), ids, versions)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make([]*core.ModeVersion, 0, len(refs))
	for rows.Next() {
		v, err := scanListedVersion(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if len(out) != len(refs) {
		return nil, fmt.Errorf("pgstore: %d of %d mode versions found: %w", len(out), len(refs), core.ErrNotFound)
	}
	return out, nil
}

// SetLabInvite implements core.ModeStore. The invitation (or its
// withdrawal) and its audit row are one batch: one round trip, one
// implicit transaction. The row is written whether or not an organisation
// has the ticker, so that the trail does not tell either.
func (s *Store) SetLabInvite(ctx context.Context, ownerOrgID, modeID, orgTicker string, invited bool) error {
	if _, err := s.AuthoredMode(ctx, ownerOrgID, modeID); err != nil {
		return err
	}
	b := &pgx.Batch{}
	detail := "lab invite " + orgTicker
	if invited {
		b.Queue(mq("InviteToLab"), modeID, ownerOrgID, orgTicker)
	} else {
		b.Queue(mq("UninviteFromLab"), modeID, orgTicker)
		detail = "lab invite withdrawn " + orgTicker
	}
	queueAudit(ctx, b, ownerOrgID, core.AuditModeListing, modeID, detail)
	return sendBatch(ctx, s.pool, b)
}

// LabInvites implements core.ModeStore.
func (s *Store) LabInvites(ctx context.Context, modeID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, mq("LabInvites"), modeID)
	if err != nil {
		return nil, translate(err)
	}
	tickers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if tickers == nil {
		tickers = []string{}
	}
	return tickers, translate(err)
}

// LabInvited implements core.ModeStore.
func (s *Store) LabInvited(ctx context.Context, modeID, orgID string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, mq("LabInvited"), modeID, orgID).Scan(&ok)
	return ok, translate(err)
}

// ListAuthoredModes implements core.ModeStore.
func (s *Store) ListAuthoredModes(ctx context.Context, orgID string) ([]*core.AuthoredMode, error) {
	return s.listAuthoredModes(ctx, mq("AuthoredModesOfOrg"), orgID)
}

// ListPublishedModes implements core.ModeStore.
func (s *Store) ListPublishedModes(ctx context.Context) ([]*core.AuthoredMode, error) {
	return s.listAuthoredModes(ctx, mq("PublishedAuthoredModes"))
}

func (s *Store) listAuthoredModes(ctx context.Context, query string, args ...any) ([]*core.AuthoredMode, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*core.AuthoredMode
	for rows.Next() {
		m, err := scanListedMode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, translate(rows.Err())
}

// ChangeListing implements core.ModeStore.
func (s *Store) ChangeListing(ctx context.Context, orgID, modeID string, a core.ModeAction) (*core.AuthoredMode, error) {
	switch a.Kind {
	case core.ActionRequestListing, core.ActionPublish:
	case core.ActionApprove, core.ActionReject, core.ActionDelist:
		return nil, core.Errorf(core.CodeForbidden, "listing review is the operator's")
	default:
		return nil, core.Errorf(core.CodeInvalidRequest, "%q is not a listing action", a.Kind)
	}
	return s.applyAction(ctx, orgID, modeID, a)
}

// ReviewListing implements core.ModeStore.
func (s *Store) ReviewListing(ctx context.Context, modeID string, a core.ModeAction) (*core.AuthoredMode, error) {
	switch a.Kind {
	case core.ActionApprove, core.ActionReject, core.ActionDelist:
	default:
		return nil, core.Errorf(core.CodeInvalidRequest, "%q is not a review action", a.Kind)
	}
	return s.applyAction(ctx, "", modeID, a)
}

// RecordCertified implements core.ModeStore.
func (s *Store) RecordCertified(ctx context.Context, modeID string, version int) (*core.AuthoredMode, error) {
	return s.applyAction(ctx, "", modeID, core.ModeAction{Kind: core.ActionCertify, Version: version})
}

func (s *Store) applyAction(ctx context.Context, orgID, modeID string, a core.ModeAction) (*core.AuthoredMode, error) {
	return s.changeMode(ctx, orgID, modeID, func(m *core.AuthoredMode) (*modeWrite, error) {
		next, err := m.Apply(a)
		if err != nil {
			return nil, err
		}
		w := &modeWrite{state: next}
		if a.Kind != core.ActionCertify {
			w.audit, w.detail = core.AuditModeListing, fmt.Sprintf("%s → listing %s", a.Kind, next.Listing)
		}
		return w, nil
	})
}

var _ core.ModeStore = (*Store)(nil)
