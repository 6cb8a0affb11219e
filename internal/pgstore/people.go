package pgstore

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conclavehq/conclave/core"
)

// People (core.People): people, memberships and roles, passkeys and
// passwords, invitations and set-up links, sessions, WebAuthn ceremonies,
// sign-in attempt budgets and the audit trail.
//
// Every change to an organisation writes its audit row in the change's own
// transaction without a round trip of its own: the row is queued in the
// same batch as the change's statements (queueAudit), or written by the
// change's statement itself (a data-modifying WITH) when it must depend on
// what the change found. A batch sent on the pool is one implicit
// transaction: its statements commit together, or none does.
//
// A change to how a person signs in (a passkey added or removed, a
// password set) concerns every organisation the person can act in, so it
// writes one row in each of them: an owner reading their organisation's
// trail sees how each of its people's sign-in changed, wherever the person
// was signed in when they changed it.

//go:embed people_queries.sql
var peopleQueriesSQL string

var peopleQueries = parseQueries(peopleQueriesSQL)

// pq returns the named query of people_queries.sql.
func pq(name string) string {
	s, ok := peopleQueries[name]
	if !ok {
		panic(fmt.Sprintf("people_queries.sql has no query %q", name))
	}
	return s
}

func personCols(p *core.Person) []any { return []any{&p.ID, &p.Email, &p.Name, &p.CreatedAt} }

func membershipCols(m *core.Membership) []any {
	return []any{&m.OrgID, &m.OrgName, &m.OrgTicker, &m.PersonID, &m.Role, &m.CreatedAt}
}

func passkeyCols(k *core.Passkey) []any {
	return []any{&k.ID, &k.PersonID, &k.CredentialID, &k.Name, &k.Credential, &k.CreatedAt, &k.LastUsedAt}
}

func invitationCols(i *core.Invitation) []any {
	return []any{&i.ID, &i.Kind, &i.OrgID, &i.Email, &i.PersonID, &i.Role, &i.CreatedBy.Kind, &i.CreatedBy.ID,
		&i.CreatedAt, &i.ExpiresAt, &i.UsedAt}
}

func sessionCols(s *core.Session) []any {
	return []any{&s.ID, &s.PersonID, &s.OrgID, &s.Address, &s.CreatedAt, &s.LastSeenAt, &s.ExpiresAt}
}

// batchSender is where a batch goes: the pool (one implicit transaction)
// or a transaction.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sendBatch sends b in one round trip and reads every result in order, running
// each queued query's callback; the first failure is returned, translated
// (a missing organisation or person a foreign key names is
// core.ErrNotFound).
func sendBatch(ctx context.Context, on batchSender, b *pgx.Batch) error {
	return translateWrite(on.SendBatch(ctx, b).Close())
}

// translateWrite is translate, and a foreign key naming no row (an
// organisation or a person that does not exist) is core.ErrNotFound.
func translateWrite(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation
		return fmt.Errorf("%w: %s", core.ErrNotFound, pgErr.ConstraintName)
	}
	return translate(err)
}

// scanInto is a queued query's callback scanning its one row into dest.
func scanInto(dest ...any) func(pgx.Row) error {
	return func(row pgx.Row) error { return row.Scan(dest...) }
}

func errRole(r core.Role) error { return fmt.Errorf("pgstore: role %q is not owner or member", r) }

// queueJoin queues personID's joining orgID with role, and its audit row
// when they were not in it already.
func queueJoin(ctx context.Context, b *pgx.Batch, orgID, personID string, role core.Role) {
	a := core.ActorOf(ctx)
	b.Queue(pq("Join"), orgID, personID, role, a.Kind, a.ID, a.Address, core.AuditPersonJoined)
}

// queuePersonAudit queues an audit row about personID's own sign-in
// methods in each organisation they belong to (see the file comment).
func queuePersonAudit(ctx context.Context, b *pgx.Batch, personID, action, object, detail string) {
	a := core.ActorOf(ctx)
	b.Queue(pq("PersonAudit"), personID, a.Kind, a.ID, a.Address, action, object, detail)
}

// CreatePerson implements core.People.
func (s *Store) CreatePerson(ctx context.Context, p *core.CreatePersonParams) (*core.Person, error) {
	if p.OrgID != "" && !p.Role.Valid() {
		return nil, errRole(p.Role)
	}
	id := cmp.Or(p.ID, core.NewID("person"))
	var out core.Person
	b := &pgx.Batch{}
	b.Queue(pq("InsertPerson"), id, core.NormalEmail(p.Email), p.Name).QueryRow(scanInto(personCols(&out)...))
	if p.OrgID != "" {
		queueJoin(ctx, b, p.OrgID, id, p.Role)
	}
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, fmt.Errorf("creating person %q: %w", p.Email, err)
	}
	return &out, nil
}

// GetPerson implements core.People.
func (s *Store) GetPerson(ctx context.Context, id string) (*core.Person, error) {
	var p core.Person
	if err := s.pool.QueryRow(ctx, pq("GetPerson"), id).Scan(personCols(&p)...); err != nil {
		return nil, translate(err)
	}
	return &p, nil
}

// PersonByEmail implements core.People.
func (s *Store) PersonByEmail(ctx context.Context, email string) (*core.Person, error) {
	var p core.Person
	if err := s.pool.QueryRow(ctx, pq("PersonByEmail"), core.NormalEmail(email)).Scan(personCols(&p)...); err != nil {
		return nil, translate(err)
	}
	return &p, nil
}

// SetPersonName implements core.People.
func (s *Store) SetPersonName(ctx context.Context, id, name string) (*core.Person, error) {
	var p core.Person
	if err := s.pool.QueryRow(ctx, pq("SetPersonName"), id, name).Scan(personCols(&p)...); err != nil {
		return nil, translate(err)
	}
	return &p, nil
}

// Memberships implements core.People.
func (s *Store) Memberships(ctx context.Context, personID string) ([]*core.Membership, error) {
	return collect(ctx, s, pq("Memberships"), func(row pgx.Rows) (*core.Membership, error) {
		var m core.Membership
		return &m, row.Scan(membershipCols(&m)...)
	}, personID)
}

// Membership implements core.People.
func (s *Store) Membership(ctx context.Context, personID, orgID string) (*core.Membership, error) {
	var m core.Membership
	if err := s.pool.QueryRow(ctx, pq("Membership"), personID, orgID).Scan(membershipCols(&m)...); err != nil {
		return nil, translate(err)
	}
	return &m, nil
}

// Members implements core.People.
func (s *Store) Members(ctx context.Context, orgID string) ([]*core.Member, error) {
	return collect(ctx, s, pq("Members"), func(row pgx.Rows) (*core.Member, error) {
		var m core.Member
		return &m, row.Scan(&m.ID, &m.Email, &m.Name, &m.CreatedAt, &m.Role, &m.JoinedAt)
	}, orgID)
}

// AddMember implements core.People. A missing person or organisation is
// core.ErrNotFound.
func (s *Store) AddMember(ctx context.Context, orgID, personID string, role core.Role) error {
	if !role.Valid() {
		return errRole(role)
	}
	b := &pgx.Batch{}
	queueJoin(ctx, b, orgID, personID, role)
	return sendBatch(ctx, s.pool, b)
}

// collect runs a query and scans each row with scan.
func collect[T any](ctx context.Context, s *Store, sql string, scan func(pgx.Rows) (*T, error), args ...any) ([]*T, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, v)
	}
	return out, translate(rows.Err())
}

// lockRoles takes the organisation's lock that serialises its role
// changes, then reads its owner count and personID's role, in one batch
// (the read is its own statement so that it sees what a change committed
// while this one waited for the lock). A person not in the organisation,
// or an organisation that does not exist, is core.ErrNotFound.
func lockRoles(ctx context.Context, tx pgx.Tx, orgID, personID string) (owners int, role core.Role, err error) {
	b := &pgx.Batch{}
	b.Queue(pq("LockRoles"), orgID)
	b.Queue(pq("ReadRoles"), orgID, personID).QueryRow(scanInto(&owners, &role))
	if err := sendBatch(ctx, tx, b); err != nil {
		return 0, "", err
	}
	if role == "" {
		return owners, "", core.ErrNotFound
	}
	return owners, role, nil
}

// SetRole implements core.People. The organisation's owners are counted
// under its lock, so of two owners demoting each other at once, the second
// finds the first already a member and is refused.
func (s *Store) SetRole(ctx context.Context, p *core.SetRoleParams) (*core.Membership, error) {
	if !p.Role.Valid() {
		return nil, errRole(p.Role)
	}
	var out core.Membership
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		owners, role, err := lockRoles(ctx, tx, p.OrgID, p.PersonID)
		if err != nil {
			return err
		}
		if role == p.Role {
			return translate(tx.QueryRow(ctx, pq("Membership"), p.PersonID, p.OrgID).Scan(membershipCols(&out)...))
		}
		if role == core.RoleOwner && owners <= 1 {
			return core.ErrLastOwner
		}
		b := &pgx.Batch{}
		b.Queue(pq("SetRole"), p.OrgID, p.PersonID, p.Role).QueryRow(scanInto(membershipCols(&out)...))
		queueAudit(ctx, b, p.OrgID, core.AuditPersonRole, p.PersonID, fmt.Sprintf("%s → %s", role, p.Role))
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		return nil, fmt.Errorf("setting the role of %s in %s: %w", p.PersonID, p.OrgID, err)
	}
	return &out, nil
}

// RemoveMember implements core.People: the person leaves the organisation
// and their sessions in it end (deleted, not moved: the next page they
// open signs them in again and lets them choose among the organisations
// they still belong to). Removing the last owner is core.ErrLastOwner,
// counted under the organisation's lock as in SetRole.
func (s *Store) RemoveMember(ctx context.Context, orgID, personID string) error {
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		owners, role, err := lockRoles(ctx, tx, orgID, personID)
		if err != nil {
			return err
		}
		if role == core.RoleOwner && owners <= 1 {
			return core.ErrLastOwner
		}
		b := &pgx.Batch{}
		b.Queue(pq("DeleteMembership"), orgID, personID)
		b.Queue(pq("DeleteOrgSessions"), personID, orgID)
		queueAudit(ctx, b, orgID, core.AuditPersonRemoved, personID, "was "+string(role))
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		return fmt.Errorf("removing %s from %s: %w", personID, orgID, err)
	}
	return nil
}

// SetPassword implements core.People: the hash, the end of the person's
// other sessions and the audit rows are one batch.
func (s *Store) SetPassword(ctx context.Context, personID, hash string, keep []byte) error {
	found := false
	b := &pgx.Batch{}
	b.Queue(pq("SetPassword"), personID, hash).Exec(func(tag pgconn.CommandTag) error {
		found = tag.RowsAffected() == 1
		return nil
	})
	b.Queue(pq("DeleteOtherSessions"), personID, keep)
	queuePersonAudit(ctx, b, personID, core.AuditPasswordSet, personID, "")
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return fmt.Errorf("setting the password of %s: %w", personID, err)
	}
	if !found {
		return fmt.Errorf("setting the password of %s: %w", personID, core.ErrNotFound)
	}
	return nil
}

// PasswordHash implements core.People.
func (s *Store) PasswordHash(ctx context.Context, personID string) (string, error) {
	var h string
	if err := s.pool.QueryRow(ctx, pq("PasswordHash"), personID).Scan(&h); err != nil {
		return "", translate(err)
	}
	return h, nil
}

// queuePasskey queues pk's insertion, scanned into out, and its audit
// rows.
func queuePasskey(ctx context.Context, b *pgx.Batch, pk *core.Passkey, out *core.Passkey) {
	id := cmp.Or(pk.ID, core.NewID("passkey"))
	b.Queue(pq("InsertPasskey"), id, pk.PersonID, pk.CredentialID, pk.Name, pk.Credential).
		QueryRow(scanInto(passkeyCols(out)...))
	queuePersonAudit(ctx, b, pk.PersonID, core.AuditPasskeyAdded, id, pk.Name)
}

// AddPasskey implements core.People. A credential id already registered
// is core.ErrConflict; a missing person core.ErrNotFound.
func (s *Store) AddPasskey(ctx context.Context, pk *core.Passkey) (*core.Passkey, error) {
	var out core.Passkey
	b := &pgx.Batch{}
	queuePasskey(ctx, b, pk, &out)
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, fmt.Errorf("adding a passkey for %s: %w", pk.PersonID, err)
	}
	return &out, nil
}

// Passkeys implements core.People.
func (s *Store) Passkeys(ctx context.Context, personID string) ([]*core.Passkey, error) {
	return collect(ctx, s, pq("Passkeys"), func(row pgx.Rows) (*core.Passkey, error) {
		var k core.Passkey
		return &k, row.Scan(passkeyCols(&k)...)
	}, personID)
}

// PasskeyByCredentialID implements core.People.
func (s *Store) PasskeyByCredentialID(ctx context.Context, credentialID []byte) (*core.Passkey, error) {
	var k core.Passkey
	if err := s.pool.QueryRow(ctx, pq("PasskeyByCredentialID"), credentialID).Scan(passkeyCols(&k)...); err != nil {
		return nil, translate(err)
	}
	return &k, nil
}

// UsePasskey implements core.People.
func (s *Store) UsePasskey(ctx context.Context, id string, credential []byte) error {
	tag, err := s.pool.Exec(ctx, pq("UsePasskey"), id, credential)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return core.ErrNotFound
	}
	return nil
}

// RemovePasskey implements core.People: one statement removes the passkey
// and writes its audit rows. Another person's passkey is core.ErrNotFound.
func (s *Store) RemovePasskey(ctx context.Context, personID, id string) error {
	a := core.ActorOf(ctx)
	var n int
	if err := s.pool.QueryRow(ctx, pq("DeletePasskey"), personID, id, a.Kind, a.ID, a.Address, core.AuditPasskeyRemoved).
		Scan(&n); err != nil {
		return translate(err)
	}
	if n == 0 {
		return core.ErrNotFound
	}
	return nil
}

// CreateInvitation implements core.People: the link and its audit row
// (person.invited, or person.setup_link_created in the link's organisation
// when it has one) are one batch. An invitation without a PersonID gets
// the id its person will have if they are new.
func (s *Store) CreateInvitation(ctx context.Context, p *core.CreateInvitationParams) (*core.Invitation, error) {
	personID := p.PersonID
	switch p.Kind {
	case core.InvitationInvite:
		if !p.Role.Valid() || p.OrgID == "" {
			return nil, fmt.Errorf("pgstore: an invitation needs an organisation and a role (%w)", errRole(p.Role))
		}
		personID = cmp.Or(personID, core.NewID("person"))
	case core.InvitationSetup:
		if personID == "" {
			return nil, errors.New("pgstore: a set-up link needs the person it is for")
		}
	default:
		return nil, fmt.Errorf("pgstore: link kind %q is not invite or setup", p.Kind)
	}
	by := core.ActorOf(ctx)
	var out core.Invitation
	b := &pgx.Batch{}
	b.Queue(pq("InsertInvitation"), p.Hash, core.NewID("link"), p.Kind, p.OrgID, core.NormalEmail(p.Email), personID,
		string(p.Role), by.Kind, by.ID, p.ExpiresAt).QueryRow(scanInto(invitationCols(&out)...))
	if p.OrgID != "" {
		action, detail := core.AuditPersonInvited, fmt.Sprintf("%s as %s", core.NormalEmail(p.Email), p.Role)
		if p.Kind == core.InvitationSetup {
			action, detail = core.AuditSetupLinkCreated, core.NormalEmail(p.Email)
		}
		queueAudit(ctx, b, p.OrgID, action, personID, detail)
	}
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, fmt.Errorf("creating a link for %q: %w", p.Email, err)
	}
	return &out, nil
}

// Invitation implements core.People.
func (s *Store) Invitation(ctx context.Context, hash []byte) (*core.Invitation, error) {
	var i core.Invitation
	if err := s.pool.QueryRow(ctx, pq("Invitation"), hash).Scan(invitationCols(&i)...); err != nil {
		return nil, translate(err)
	}
	return &i, nil
}

// AcceptInvitation implements core.People. The link is taken by a
// conditional update, so of two accepts one takes it and the other finds
// it used; what it grants is written in the same transaction, one batch
// after the person is read. The person is the link's, or p.PersonID when
// a signed-in person accepts an invitation for their own email (another
// person, or another email, is core.ErrNotFound and leaves the link
// unused). A new person gets the invitation's email and PersonID; an
// email that already has a person is core.ErrConflict — that person signs
// in and accepts, so a link can never set an existing person's password.
func (s *Store) AcceptInvitation(ctx context.Context, p *core.AcceptInvitationParams) (*core.Person, *core.Session, error) {
	var (
		person  core.Person
		session *core.Session
	)
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var inv core.Invitation
		err := tx.QueryRow(ctx, pq("UseInvitation"), p.Hash).Scan(invitationCols(&inv)...)
		if errors.Is(err, pgx.ErrNoRows) {
			if err := tx.QueryRow(ctx, pq("Invitation"), p.Hash).Scan(invitationCols(&inv)...); err != nil {
				return translate(err)
			}
			return core.ErrGone
		}
		if err != nil {
			return translate(err)
		}
		personID := inv.PersonID
		if p.PersonID != "" {
			if inv.Kind == core.InvitationSetup && p.PersonID != inv.PersonID {
				return core.ErrNotFound
			}
			personID = p.PersonID
		}
		isNew := false
		err = tx.QueryRow(ctx, pq("GetPerson"), personID).Scan(personCols(&person)...)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && inv.Kind == core.InvitationInvite && p.PersonID == "":
			isNew = true
		case err != nil:
			return translate(err)
		case inv.Kind == core.InvitationInvite && person.Email != inv.Email:
			return core.ErrNotFound
		}

		actx := ctx
		if a := core.ActorOf(ctx); a.Kind == core.ActorSystem {
			// No one signed in: the actor is whoever holds the link, the
			// person it is for.
			actx = core.WithActor(ctx, core.Actor{Kind: core.ActorPerson, ID: personID, Address: sessionAddress(p.Session)})
		}
		b := &pgx.Batch{}
		if isNew {
			b.Queue(pq("InsertPerson"), personID, inv.Email, p.Name).QueryRow(scanInto(personCols(&person)...))
		}
		// Joining first, so the new organisation's trail also records the
		// sign-in method set below.
		if inv.Kind == core.InvitationInvite {
			queueJoin(actx, b, inv.OrgID, personID, inv.Role)
		}
		if p.PasswordHash != "" {
			b.Queue(pq("SetPassword"), personID, p.PasswordHash)
			b.Queue(pq("DeleteOtherSessions"), personID, nil)
			queuePersonAudit(actx, b, personID, core.AuditPasswordSet, personID, "")
		}
		if p.Passkey != nil {
			pk := *p.Passkey
			pk.PersonID = personID
			queuePasskey(actx, b, &pk, new(core.Passkey))
		}
		if p.Session != nil {
			sp := *p.Session
			sp.PersonID, sp.OrgID = personID, cmp.Or(sp.OrgID, inv.OrgID)
			session = new(core.Session)
			queueSession(b, &sp, session)
		}
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("accepting a link: %w", err)
	}
	return &person, session, nil
}

func sessionAddress(p *core.CreateSessionParams) string {
	if p == nil {
		return ""
	}
	return p.Address
}

// queueSession queues the insertion of the session p, scanned into out.
func queueSession(b *pgx.Batch, p *core.CreateSessionParams, out *core.Session) {
	b.Queue(pq("InsertSession"), p.Hash, core.NewID("sess"), p.PersonID, p.OrgID, p.Address, p.ExpiresAt).
		QueryRow(scanInto(sessionCols(out)...))
}

// CreateSession implements core.People. A missing person is
// core.ErrNotFound.
func (s *Store) CreateSession(ctx context.Context, p *core.CreateSessionParams) (*core.Session, error) {
	var out core.Session
	b := &pgx.Batch{}
	queueSession(b, p, &out)
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, fmt.Errorf("creating a session for %s: %w", p.PersonID, err)
	}
	return &out, nil
}

// Session implements core.People: one statement, which writes only when
// the recorded use is over a minute old.
func (s *Store) Session(ctx context.Context, hash []byte, idle time.Duration) (*core.Session, error) {
	var out core.Session
	if err := s.pool.QueryRow(ctx, pq("TouchSession"), hash, idle).Scan(sessionCols(&out)...); err != nil {
		return nil, translate(err)
	}
	return &out, nil
}

// SetSessionOrg implements core.People.
func (s *Store) SetSessionOrg(ctx context.Context, hash []byte, orgID string) error {
	tag, err := s.pool.Exec(ctx, pq("SetSessionOrg"), hash, orgID)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return core.ErrNotFound
	}
	return nil
}

// DeleteSession implements core.People.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	_, err := s.pool.Exec(ctx, pq("DeleteSession"), hash)
	return translate(err)
}

// EndSessions implements core.People. With orgID (an owner ending a
// member's sessions) one statement ends them and writes the audit row.
func (s *Store) EndSessions(ctx context.Context, personID, orgID string, keep []byte) (int, error) {
	if orgID == "" {
		tag, err := s.pool.Exec(ctx, pq("EndSessions"), personID, keep)
		if err != nil {
			return 0, translate(err)
		}
		return int(tag.RowsAffected()), nil
	}
	a := core.ActorOf(ctx)
	var n int
	err := s.pool.QueryRow(ctx, pq("EndSessionsByOwner"), personID, keep, orgID, a.Kind, a.ID, a.Address,
		core.AuditSessionsEnded).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("ending the sessions of %s: %w", personID, translateWrite(err))
	}
	return n, nil
}

// PutCeremony implements core.People; it also clears ceremonies long
// expired, in the same batch.
func (s *Store) PutCeremony(ctx context.Context, hash, state []byte, expires time.Time) error {
	b := &pgx.Batch{}
	b.Queue(pq("ReapCeremonies"))
	b.Queue(pq("PutCeremony"), hash, state, expires)
	return sendBatch(ctx, s.pool, b)
}

// TakeCeremony implements core.People.
func (s *Store) TakeCeremony(ctx context.Context, hash []byte) ([]byte, error) {
	var (
		state []byte
		live  bool
	)
	if err := s.pool.QueryRow(ctx, pq("TakeCeremony"), hash).Scan(&state, &live); err != nil {
		return nil, translate(err)
	}
	if !live {
		return nil, core.ErrNotFound
	}
	return state, nil
}

// SpendAttempt implements core.People with one call of
// spend_signin_attempt (migration 0018): GCRA per subject, Limit attempts
// in a burst and one more each Window/Limit. Subjects are sorted (and a
// repeated one counted once) so that concurrent calls lock their rows in
// the same order.
func (s *Store) SpendAttempt(ctx context.Context, p *core.AttemptParams) (time.Duration, error) {
	budgets := slices.SortedFunc(slices.Values(p.Subjects), func(a, b core.AttemptBudget) int {
		return cmp.Compare(a.Subject, b.Subject)
	})
	budgets = slices.CompactFunc(budgets, func(a, b core.AttemptBudget) bool { return a.Subject == b.Subject })
	subjects := make([]string, len(budgets))
	intervals := make([]int64, len(budgets))
	tolerances := make([]int64, len(budgets))
	for i, b := range budgets {
		if b.Limit < 1 || b.Window <= 0 {
			return 0, fmt.Errorf("pgstore: the budget of %q needs a positive limit and window", b.Subject)
		}
		interval := b.Window.Microseconds() / int64(b.Limit)
		subjects[i], intervals[i], tolerances[i] = b.Subject, interval, b.Window.Microseconds()-interval
	}
	var waitUS int64
	if err := s.pool.QueryRow(ctx, pq("SpendAttempt"), subjects, intervals, tolerances).Scan(&waitUS); err != nil {
		return 0, translate(err)
	}
	return time.Duration(waitUS) * time.Microsecond, nil
}

// Audit implements core.People.
func (s *Store) Audit(ctx context.Context, q *core.AuditQuery) ([]*core.AuditEntry, error) {
	return collect(ctx, s, pq("Audit"), func(row pgx.Rows) (*core.AuditEntry, error) {
		var e core.AuditEntry
		return &e, row.Scan(&e.ID, &e.OrgID, &e.Actor.Kind, &e.Actor.ID, &e.Actor.Address, &e.Action, &e.Object, &e.Detail, &e.At)
	}, q.OrgID, q.Since, max(q.Limit, 0))
}

var _ core.People = (*Store)(nil)
