package peopletest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
)

// age moves a session's last use and absolute end into the past, as time
// passing would.
func (b *bundle) age(t *testing.T, s *people.SignedIn, idle, absolute time.Duration) {
	t.Helper()
	_, err := b.pool.Exec(ctx, `UPDATE sessions SET last_seen_at = now() - $2::interval, expires_at = expires_at - $3::interval WHERE id = $1`,
		s.Session.ID, idle, absolute)
	require.NoError(t, err)
}

func TestSessionTimeouts(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{SessionIdle: 2 * time.Hour, SessionMaxAge: 48 * time.Hour})
	signIn := func() *people.SignedIn {
		before := time.Now()
		s, err := b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.10")
		require.NoError(t, err)
		require.WithinRange(t, s.Session.ExpiresAt, before.Add(48*time.Hour-time.Second), time.Now().Add(48*time.Hour+time.Second),
			"the absolute end is SessionMaxAge after sign-in")
		return s
	}

	// Idle: an hour unused is within the configured two; three are not.
	s := signIn()
	b.age(t, s, time.Hour, 0)
	p, _, err := b.svc.Principal(ctx, s.Secret, "203.0.113.10")
	require.NoError(t, err)
	require.Equal(t, b.member.Person.ID, p.Person.ID)
	b.age(t, s, 3*time.Hour, 0)
	_, _, err = b.svc.Principal(ctx, s.Secret, "203.0.113.10")
	require.ErrorIs(t, err, core.ErrNotFound, "idle for longer than SessionIdle: signed out")

	// Absolute: used a moment ago, but past its end.
	s = signIn()
	b.age(t, s, 0, 48*time.Hour+time.Minute)
	_, _, err = b.svc.Principal(ctx, s.Secret, "203.0.113.10")
	require.ErrorIs(t, err, core.ErrNotFound, "past SessionMaxAge: signed out however recently used")

	// A fresh sign-in makes a new secret each time.
	s1, s2 := signIn(), signIn()
	require.NotEqual(t, s1.Secret, s2.Secret)
	require.Len(t, s1.Secret, 43, "32 random bytes, base64url")
}

func TestSignOutEverywhereAndOwnerEndingSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	signIn := func(email, addr string) *people.SignedIn {
		s, err := b.svc.SignInPassword(ctx, email, "a long passphrase of "+email, addr)
		require.NoError(t, err)
		return s
	}
	live := func(s *people.SignedIn) bool {
		_, _, err := b.svc.Principal(ctx, s.Secret, "")
		if err != nil {
			require.ErrorIs(t, err, core.ErrNotFound)
		}
		return err == nil
	}

	// Sign out everywhere: every session of the person, nobody else's.
	o1, o2 := signIn("olive@acme.example", "203.0.113.11"), signIn("olive@acme.example", "203.0.113.12")
	m1, m2 := signIn("mia@acme.example", "203.0.113.13"), signIn("mia@acme.example", "203.0.113.14")
	require.NoError(t, b.svc.SignOutEverywhere(ctx, b.owner))
	require.False(t, live(o1))
	require.False(t, live(o2))
	require.True(t, live(m1), "another person's sessions stay")

	// A member may not end an owner's sessions.
	o3 := signIn("olive@acme.example", "203.0.113.11")
	_, err := b.svc.EndSessions(ctx, b.member, b.owner.Person.ID)
	require.Equal(t, core.CodeForbidden, code(t, err))
	require.True(t, live(o3))

	// An owner ends a member's: all of them, audited.
	n, err := b.svc.EndSessions(ctx, b.owner, b.member.Person.ID)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 2)
	require.False(t, live(m1))
	require.False(t, live(m2))
	rows, err := b.svc.Audit(ctx, b.owner, &core.AuditQuery{})
	require.NoError(t, err)
	row := findRow(t, rows, core.AuditSessionsEnded)
	require.Equal(t, b.member.Person.ID, row.Object)
	require.Equal(t, core.Actor{Kind: core.ActorPerson, ID: b.owner.Person.ID, Address: b.owner.Address}, row.Actor)

	// Someone outside the organisation is not found.
	other, _, err := b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other Co", Ticker: "OTHR"})
	require.NoError(t, err)
	outsider, _, err := b.svc.CreatePerson(core.WithActor(ctx, core.Operator), other.ID, "otto@other.example", "Otto", core.RoleOwner)
	require.NoError(t, err)
	_, err = b.svc.EndSessions(ctx, b.owner, outsider.ID)
	require.ErrorIs(t, err, core.ErrNotFound)
}

// A session acts in the organisation it chose while the person belongs to
// it; otherwise in their first, which it then records.
func TestSessionOrganisation(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	other, _, err := b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other Co", Ticker: "OTHR"})
	require.NoError(t, err)
	_, _, err = b.svc.CreatePerson(core.WithActor(ctx, core.Operator), other.ID, "mia@acme.example", "Mia", core.RoleOwner)
	require.NoError(t, err, "the operator adds an existing person to a second organisation")

	s, err := b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.15")
	require.NoError(t, err)
	p, _, err := b.svc.Principal(ctx, s.Secret, "203.0.113.15")
	require.NoError(t, err)
	require.Equal(t, b.org.ID, p.Org.ID, "first by name: Acme Research")
	require.Equal(t, core.RoleMember, p.Role)

	require.NoError(t, b.svc.ChooseOrg(ctx, s.Secret, p, other.ID))
	p, _, err = b.svc.Principal(ctx, s.Secret, "203.0.113.15")
	require.NoError(t, err)
	require.Equal(t, other.ID, p.Org.ID)
	require.Equal(t, core.RoleOwner, p.Role, "the role is the one in the chosen organisation")
	require.Equal(t, core.PrincipalSession, p.Kind)
	require.Equal(t, "203.0.113.15", p.Address)

	third, _, err := b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Third Co", Ticker: "THRD"})
	require.NoError(t, err)
	require.ErrorIs(t, b.svc.ChooseOrg(ctx, s.Secret, p, third.ID), core.ErrNotFound, "not one of theirs")

	// The chosen organisation is one they no longer belong to.
	_, err = b.pool.Exec(ctx, `UPDATE sessions SET org_id = $2 WHERE id = $1`, s.Session.ID, third.ID)
	require.NoError(t, err)
	p, sess, err := b.svc.Principal(ctx, s.Secret, "203.0.113.15")
	require.NoError(t, err)
	require.Equal(t, b.org.ID, p.Org.ID)
	require.Equal(t, b.org.ID, sess.OrgID)
	var stored string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT org_id FROM sessions WHERE id = $1`, s.Session.ID).Scan(&stored))
	require.Equal(t, b.org.ID, stored, "the fallback is recorded in the session")
}

// A person in no organisation is signed in, without one, and may do
// nothing an organisation's role grants.
func TestSignedInWithoutOrganisation(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	solo, err := b.store.CreatePerson(core.WithActor(ctx, core.Operator), &core.CreatePersonParams{Email: "solo@acme.example", Name: "Solo"})
	require.NoError(t, err)
	link, err := b.svc.SetupLink(core.WithActor(ctx, core.Operator), solo.ID)
	require.NoError(t, err)
	s, err := b.svc.AcceptWithPassword(ctx, secretOf(link), "", "a long passphrase of solo", "203.0.113.16")
	require.NoError(t, err)
	p, _, err := b.svc.Principal(ctx, s.Secret, "203.0.113.16")
	require.NoError(t, err)
	require.Equal(t, solo.ID, p.Person.ID)
	require.Nil(t, p.Org)
	_, err = b.svc.Members(ctx, p)
	require.Equal(t, core.CodeForbidden, code(t, err))
	_, _, err = b.svc.CreateKey(ctx, p, &people.NewKey{Name: "nowhere"})
	require.Equal(t, core.CodeForbidden, code(t, err))
}

// With the database away, nobody is signed in: sign-in and sessions answer
// service_unavailable, never a fallback.
func TestSignInUnavailableWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	s, err := b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.17")
	require.NoError(t, err)
	b.pool.Close()

	_, err = b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.17")
	require.Equal(t, core.CodeServiceUnavailable, code(t, err))
	_, _, err = b.svc.Principal(ctx, s.Secret, "203.0.113.17")
	require.Equal(t, core.CodeServiceUnavailable, code(t, err))
	_, err = b.svc.BeginPasskeySignIn(ctx, "203.0.113.17")
	require.Equal(t, core.CodeServiceUnavailable, code(t, err))
}

func findRow(t *testing.T, rows []*core.AuditEntry, action string) *core.AuditEntry {
	t.Helper()
	for _, r := range rows {
		if r.Action == action {
			return r
		}
	}
	require.Failf(t, "no audit row", "no %s row in %d rows", action, len(rows))
	return nil
}
