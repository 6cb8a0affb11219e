package peopletest

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
)

// An expired link changes nothing, whichever way it is used; a forged
// one is not found.
func TestExpiredAndForgedLinks(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{LinkTTL: time.Hour})
	before := time.Now()
	link, inv, err := b.svc.Invite(ctx, b.owner, "late@acme.example", core.RoleMember)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(link, "http://localhost:8080/link/"), link)
	require.WithinRange(t, inv.ExpiresAt, before.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second), "LinkTTL")
	secret := secretOf(link)

	_, err = b.pool.Exec(ctx, `UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, inv.ID)
	require.NoError(t, err)
	_, err = b.svc.Link(ctx, secret)
	require.ErrorIs(t, err, core.ErrGone)
	_, err = b.svc.AcceptWithPassword(ctx, secret, "Late", "a fine long passphrase", "")
	require.ErrorIs(t, err, core.ErrGone)
	_, err = b.svc.BeginLinkPasskey(ctx, secret, "Late")
	require.ErrorIs(t, err, core.ErrGone)
	_, err = b.store.PersonByEmail(ctx, "late@acme.example")
	require.ErrorIs(t, err, core.ErrNotFound, "nobody was created")

	// Forged: not base64url, or well-formed but never issued.
	wellFormed := base64.RawURLEncoding.EncodeToString(randomBytes(32))
	for _, s := range []string{"forged", wellFormed, secret[:len(secret)-1], ""} {
		_, err = b.svc.Link(ctx, s)
		require.ErrorIs(t, err, core.ErrNotFound, s)
		_, err = b.svc.AcceptWithPassword(ctx, s, "Forger", "a fine long passphrase", "")
		require.ErrorIs(t, err, core.ErrNotFound, s)
		_, err = b.svc.AcceptSignedIn(ctx, s, b.member)
		require.ErrorIs(t, err, core.ErrNotFound, s)
	}
}

// A set-up link sets a new password for its person; the old one stops
// working, and the link is used.
func TestSetupLinkResetsAPassword(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	link, err := b.svc.SetupLink(core.WithActor(ctx, core.Operator), b.member.Person.ID)
	require.NoError(t, err)
	v, err := b.svc.Link(ctx, secretOf(link))
	require.NoError(t, err)
	require.Equal(t, core.InvitationSetup, v.Kind)
	require.Equal(t, "mia@acme.example", v.Email)

	_, err = b.svc.AcceptWithPassword(ctx, secretOf(link), "", "mia@acme.example", "")
	require.Equal(t, "password", fieldOf(t, err), "too short, and the email")
	_, err = b.svc.AcceptWithPassword(ctx, secretOf(link), "", "Password12345", "")
	require.Equal(t, "password", fieldOf(t, err), "common, in another case")
	s, err := b.svc.AcceptWithPassword(ctx, secretOf(link), "", "a new and unguessable phrase", "203.0.113.20")
	require.NoError(t, err)
	require.Equal(t, b.member.Person.ID, s.Person.ID)
	require.Equal(t, "Someone", s.Person.Name, "a set-up link keeps the person's name")

	_, err = b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.20")
	require.Equal(t, "password", fieldOf(t, err), "the old password stopped working")
	_, err = b.svc.SignInPassword(ctx, "mia@acme.example", "a new and unguessable phrase", "203.0.113.20")
	require.NoError(t, err)
	_, err = b.svc.AcceptWithPassword(ctx, secretOf(link), "", "yet another fine phrase", "")
	require.ErrorIs(t, err, core.ErrGone)

	_, err = b.svc.SetupLink(core.WithActor(ctx, core.Operator), "person_nobody")
	require.ErrorIs(t, err, core.ErrNotFound)
}
