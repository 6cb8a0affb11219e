package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// peopleStore is what the people section uses: core.People, organisations
// to hold people, and keys to carry their creator's role.
type peopleStore interface {
	core.Orgs
	core.Keys
	core.People
}

// RunPeople is the section of core.People: people and their emails,
// memberships and roles with the last-owner rule (also when two owners
// demote or remove each other at once), passwords, passkeys, single-use
// invitations and set-up links (also two accepts at once), sessions and
// their two expiries, WebAuthn ceremonies, sign-in attempt budgets, the
// creator's role a key carries, and the audit row of every change.
func RunPeople[S peopleStore](t *testing.T, newStore func(t *testing.T) S) {
	runPeopleMembers(t, newStore)
	runPeopleCredentials(t, newStore)
	runPeopleLinks(t, newStore)
	runPeopleSessions(t, newStore)
	runPeopleAudit(t, newStore)
}

// actingAs is a context whose changes are person id's, from an address.
func actingAs(id string) context.Context {
	return core.WithActor(context.Background(), core.Actor{Kind: core.ActorPerson, ID: id, Address: "203.0.113.7"})
}

// runPeopleMembers: people and their emails, memberships and roles, the last-owner rule (also under a race), and removal.
func runPeopleMembers[S peopleStore](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("PersonCreateFind", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p, err := s.CreatePerson(ctx, &core.CreatePersonParams{Email: "  Ada.Lovelace@Example.COM ", Name: "Ada"})
		require.NoError(t, err)
		require.Equal(t, "ada.lovelace@example.com", p.Email, "emails are stored trimmed and lower-cased")
		require.True(t, strings.HasPrefix(p.ID, "person_"))

		got, err := s.PersonByEmail(ctx, "ADA.LOVELACE@example.com")
		require.NoError(t, err)
		require.Equal(t, p.ID, got.ID)
		got, err = s.GetPerson(ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, "Ada", got.Name)

		_, err = s.CreatePerson(ctx, &core.CreatePersonParams{Email: "ada.lovelace@EXAMPLE.com", Name: "Other Ada"})
		require.ErrorIs(t, err, core.ErrConflict, "one person per email, whatever its case")

		renamed, err := s.SetPersonName(ctx, p.ID, "Ada King")
		require.NoError(t, err)
		require.Equal(t, "Ada King", renamed.Name)

		_, err = s.GetPerson(ctx, "person_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.PersonByEmail(ctx, "nobody@example.com")
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.SetPersonName(ctx, "person_missing", "X")
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("MembershipsAndMembers", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		zeta, alpha := createOrg(t, s, "Zeta Works"), createOrg(t, s, "Alpha Works")
		ada := createPerson(t, s, zeta.ID, "ada@example.com", core.RoleOwner)
		bob := createPerson(t, s, zeta.ID, "bob@example.com", core.RoleMember)
		require.NoError(t, s.AddMember(ctx, alpha.ID, ada.ID, core.RoleMember))
		require.NoError(t, s.AddMember(ctx, alpha.ID, ada.ID, core.RoleOwner), "adding a member again changes nothing")

		ms, err := s.Memberships(ctx, ada.ID)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		require.Equal(t, []string{"Alpha Works", "Zeta Works"}, []string{ms[0].OrgName, ms[1].OrgName}, "by name")
		require.Equal(t, core.RoleMember, ms[0].Role, "the second AddMember left the role as it was")
		require.Equal(t, alpha.Ticker, ms[0].OrgTicker)
		require.Equal(t, core.RoleOwner, ms[1].Role)

		m, err := s.Membership(ctx, bob.ID, zeta.ID)
		require.NoError(t, err)
		require.Equal(t, core.RoleMember, m.Role)
		_, err = s.Membership(ctx, bob.ID, alpha.ID)
		require.ErrorIs(t, err, core.ErrNotFound)

		members, err := s.Members(ctx, zeta.ID)
		require.NoError(t, err)
		require.Len(t, members, 2)
		require.Equal(t, []string{"ada@example.com", "bob@example.com"}, []string{members[0].Email, members[1].Email})
		require.Equal(t, []core.Role{core.RoleOwner, core.RoleMember}, []core.Role{members[0].Role, members[1].Role})

		require.ErrorIs(t, s.AddMember(ctx, alpha.ID, "person_missing", core.RoleMember), core.ErrNotFound)
		require.ErrorIs(t, s.AddMember(ctx, "org_missing", bob.ID, core.RoleMember), core.ErrNotFound)
		_, err = s.CreatePerson(ctx, &core.CreatePersonParams{Email: "cy@example.com", Name: "Cy", OrgID: "org_missing", Role: core.RoleMember})
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.PersonByEmail(ctx, "cy@example.com")
		require.ErrorIs(t, err, core.ErrNotFound, "a person whose membership failed is not created either")
	})

	t.Run("RolesKeepAnOwner", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Owned")
		ada := createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)
		bob := createPerson(t, s, org.ID, "bob@example.com", core.RoleMember)

		_, err := s.SetRole(ctx, &core.SetRoleParams{OrgID: org.ID, PersonID: ada.ID, Role: core.RoleMember})
		require.ErrorIs(t, err, core.ErrLastOwner)
		require.ErrorIs(t, s.RemoveMember(ctx, org.ID, ada.ID), core.ErrLastOwner)

		m, err := s.SetRole(ctx, &core.SetRoleParams{OrgID: org.ID, PersonID: bob.ID, Role: core.RoleOwner})
		require.NoError(t, err)
		require.Equal(t, core.RoleOwner, m.Role)
		require.Equal(t, org.Name, m.OrgName)
		m, err = s.SetRole(ctx, &core.SetRoleParams{OrgID: org.ID, PersonID: bob.ID, Role: core.RoleOwner})
		require.NoError(t, err, "setting the role someone has is no change")
		require.Equal(t, core.RoleOwner, m.Role)

		m, err = s.SetRole(ctx, &core.SetRoleParams{OrgID: org.ID, PersonID: ada.ID, Role: core.RoleMember})
		require.NoError(t, err, "with two owners, one may step down")
		require.Equal(t, core.RoleMember, m.Role)
		_, err = s.SetRole(ctx, &core.SetRoleParams{OrgID: org.ID, PersonID: bob.ID, Role: core.RoleMember})
		require.ErrorIs(t, err, core.ErrLastOwner)
		requireOwners(t, s, org.ID, bob.ID)

		_, err = s.SetRole(ctx, &core.SetRoleParams{OrgID: org.ID, PersonID: "person_missing", Role: core.RoleOwner})
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.SetRole(ctx, &core.SetRoleParams{OrgID: "org_missing", PersonID: bob.ID, Role: core.RoleMember})
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	// Two owners demote (or remove) each other at the same moment: one
	// wins, and the organisation keeps exactly one owner. Each round starts
	// both changes together.

	t.Run("OwnersDemotingEachOtherKeepOne", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for round := range 16 {
			org := createOrg(t, s, fmt.Sprintf("Race %d", round))
			a := createPerson(t, s, org.ID, fmt.Sprintf("a%d@example.com", round), core.RoleOwner)
			b := createPerson(t, s, org.ID, fmt.Sprintf("b%d@example.com", round), core.RoleOwner)
			change := func(by, target string) error {
				if round%2 == 1 && by == b.ID {
					return s.RemoveMember(actingAs(by), org.ID, target)
				}
				_, err := s.SetRole(actingAs(by), &core.SetRoleParams{OrgID: org.ID, PersonID: target, Role: core.RoleMember})
				return err
			}
			errs := together(func() error { return change(a.ID, b.ID) }, func() error { return change(b.ID, a.ID) })
			won := 0
			for _, err := range errs {
				if err == nil {
					won++
					continue
				}
				require.ErrorIs(t, err, core.ErrLastOwner, "round %d", round)
			}
			require.Equal(t, 1, won, "round %d: exactly one change wins", round)
			members, err := s.Members(ctx, org.ID)
			require.NoError(t, err)
			owners := 0
			for _, m := range members {
				if m.Role == core.RoleOwner {
					owners++
				}
			}
			require.Equal(t, 1, owners, "round %d: one owner is left", round)
		}
	})

	t.Run("RemoveMemberEndsTheirSessionsThere", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Leaving")
		other := createOrg(t, s, "Staying")
		createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)
		bob := createPerson(t, s, org.ID, "bob@example.com", core.RoleMember)
		require.NoError(t, s.AddMember(ctx, other.ID, bob.ID, core.RoleMember))
		here, there := newSession(t, s, bob.ID, org.ID), newSession(t, s, bob.ID, other.ID)

		require.NoError(t, s.RemoveMember(ctx, org.ID, bob.ID))
		_, err := s.Membership(ctx, bob.ID, org.ID)
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.Session(ctx, here, time.Hour)
		require.ErrorIs(t, err, core.ErrNotFound, "the session in the organisation left ended")
		sess, err := s.Session(ctx, there, time.Hour)
		require.NoError(t, err, "the session in another organisation goes on")
		require.Equal(t, other.ID, sess.OrgID)

		require.ErrorIs(t, s.RemoveMember(ctx, org.ID, bob.ID), core.ErrNotFound, "no longer a member")
		_, err = s.GetPerson(ctx, bob.ID)
		require.NoError(t, err, "the person remains")
	})
}

// runPeopleCredentials: passwords, passkeys and WebAuthn ceremonies.
func runPeopleCredentials[S peopleStore](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("PasswordsEndOtherSessions", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Passwords")
		ada := createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)
		_, err := s.PasswordHash(ctx, ada.ID)
		require.ErrorIs(t, err, core.ErrNotFound, "no password yet")

		keep, other := newSession(t, s, ada.ID, org.ID), newSession(t, s, ada.ID, org.ID)
		phc := "$argon2id$v=19$m=65536,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2g"
		require.NoError(t, s.SetPassword(ctx, ada.ID, phc, keep))
		got, err := s.PasswordHash(ctx, ada.ID)
		require.NoError(t, err)
		require.Equal(t, phc, got)
		_, err = s.Session(ctx, keep, time.Hour)
		require.NoError(t, err, "the session that changed the password stays")
		_, err = s.Session(ctx, other, time.Hour)
		require.ErrorIs(t, err, core.ErrNotFound, "every other session ended")

		require.NoError(t, s.SetPassword(ctx, ada.ID, phc+"x", nil))
		_, err = s.Session(ctx, keep, time.Hour)
		require.ErrorIs(t, err, core.ErrNotFound, "nil keeps none")

		require.ErrorIs(t, s.SetPassword(ctx, "person_missing", phc, nil), core.ErrNotFound)
		_, err = s.PasswordHash(ctx, "person_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("Passkeys", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Passkeys")
		ada := createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)
		bob := createPerson(t, s, org.ID, "bob@example.com", core.RoleMember)
		laptop, err := s.AddPasskey(ctx, &core.Passkey{PersonID: ada.ID, CredentialID: randomBytes(t, 16), Name: "Laptop",
			Credential: []byte(`{"sign_count":0}`)})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(laptop.ID, "passkey_"))
		require.Nil(t, laptop.LastUsedAt)
		phone, err := s.AddPasskey(ctx, &core.Passkey{PersonID: ada.ID, CredentialID: randomBytes(t, 16), Name: "Phone",
			Credential: []byte(`{"sign_count":0}`)})
		require.NoError(t, err)

		keys, err := s.Passkeys(ctx, ada.ID)
		require.NoError(t, err)
		require.Equal(t, []string{laptop.ID, phone.ID}, []string{keys[0].ID, keys[1].ID}, "oldest first")
		found, err := s.PasskeyByCredentialID(ctx, phone.CredentialID)
		require.NoError(t, err)
		require.Equal(t, phone.ID, found.ID)
		require.Equal(t, ada.ID, found.PersonID)

		require.NoError(t, s.UsePasskey(ctx, phone.ID, []byte(`{"sign_count":1}`)))
		found, err = s.PasskeyByCredentialID(ctx, phone.CredentialID)
		require.NoError(t, err)
		require.JSONEq(t, `{"sign_count":1}`, string(found.Credential), "the record is updated")
		require.NotNil(t, found.LastUsedAt)
		require.ErrorIs(t, s.UsePasskey(ctx, "passkey_missing", nil), core.ErrNotFound)

		_, err = s.AddPasskey(ctx, &core.Passkey{PersonID: bob.ID, CredentialID: phone.CredentialID, Name: "Copy", Credential: []byte("{}")})
		require.ErrorIs(t, err, core.ErrConflict, "a credential belongs to one person")
		_, err = s.AddPasskey(ctx, &core.Passkey{PersonID: "person_missing", CredentialID: randomBytes(t, 16), Name: "X", Credential: []byte("{}")})
		require.ErrorIs(t, err, core.ErrNotFound)

		require.ErrorIs(t, s.RemovePasskey(ctx, bob.ID, laptop.ID), core.ErrNotFound, "another person's passkey")
		require.NoError(t, s.RemovePasskey(ctx, ada.ID, laptop.ID))
		require.ErrorIs(t, s.RemovePasskey(ctx, ada.ID, laptop.ID), core.ErrNotFound)
		keys, err = s.Passkeys(ctx, ada.ID)
		require.NoError(t, err)
		require.Len(t, keys, 1)
		_, err = s.PasskeyByCredentialID(ctx, laptop.CredentialID)
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("Ceremonies", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		hash := randomBytes(t, 32)
		require.NoError(t, s.PutCeremony(ctx, hash, []byte(`{"challenge":"abc"}`), time.Now().Add(5*time.Minute)))
		state, err := s.TakeCeremony(ctx, hash)
		require.NoError(t, err)
		require.JSONEq(t, `{"challenge":"abc"}`, string(state))
		_, err = s.TakeCeremony(ctx, hash)
		require.ErrorIs(t, err, core.ErrNotFound, "a ceremony is finished once")

		stale := randomBytes(t, 32)
		require.NoError(t, s.PutCeremony(ctx, stale, []byte("{}"), time.Now().Add(-time.Second)))
		_, err = s.TakeCeremony(ctx, stale)
		require.ErrorIs(t, err, core.ErrNotFound, "an expired ceremony")
	})
}

// runPeopleLinks: single-use invitations and set-up links.
func runPeopleLinks[S peopleStore](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("InvitationIsSingleUse", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Inviting")
		ada := createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)
		hash := randomBytes(t, 32)
		inv, err := s.CreateInvitation(actingAs(ada.ID), &core.CreateInvitationParams{Hash: hash, Kind: core.InvitationInvite,
			OrgID: org.ID, Email: "Bob@Example.com", Role: core.RoleMember, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, "bob@example.com", inv.Email)
		require.NotEmpty(t, inv.PersonID, "the id a new person will have")
		require.Equal(t, core.Actor{Kind: core.ActorPerson, ID: ada.ID}, inv.CreatedBy)
		require.Nil(t, inv.UsedAt)

		sessHash := randomBytes(t, 32)
		bob, sess, err := s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: hash, Name: "Bob",
			PasswordHash: "$argon2id$v=19$m=65536,t=3,p=1$YQ$Yg", Session: sessionParams(sessHash, "", time.Hour)})
		require.NoError(t, err)
		require.Equal(t, inv.PersonID, bob.ID)
		require.Equal(t, "bob@example.com", bob.Email)
		require.Equal(t, "Bob", bob.Name)
		require.Equal(t, org.ID, sess.OrgID, "the session is in the organisation joined")
		m, err := s.Membership(ctx, bob.ID, org.ID)
		require.NoError(t, err)
		require.Equal(t, core.RoleMember, m.Role)
		_, err = s.PasswordHash(ctx, bob.ID)
		require.NoError(t, err)
		_, err = s.Session(ctx, sessHash, time.Hour)
		require.NoError(t, err)

		_, _, err = s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: hash, Name: "Mallory", PasswordHash: "x"})
		require.ErrorIs(t, err, core.ErrGone, "a used link")
		used, err := s.Invitation(ctx, hash)
		require.NoError(t, err)
		require.NotNil(t, used.UsedAt)
		_, _, err = s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: randomBytes(t, 32), Name: "X", PasswordHash: "x"})
		require.ErrorIs(t, err, core.ErrNotFound, "a forged link")
		_, err = s.Invitation(ctx, randomBytes(t, 32))
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("ExpiredLinkChangesNothing", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Expired")
		hash := randomBytes(t, 32)
		inv, err := s.CreateInvitation(ctx, &core.CreateInvitationParams{Hash: hash, Kind: core.InvitationInvite,
			OrgID: org.ID, Email: "late@example.com", Role: core.RoleOwner, ExpiresAt: time.Now().Add(-time.Second)})
		require.NoError(t, err)
		_, _, err = s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: hash, Name: "Late", PasswordHash: "x"})
		require.ErrorIs(t, err, core.ErrGone)
		_, err = s.GetPerson(ctx, inv.PersonID)
		require.ErrorIs(t, err, core.ErrNotFound, "no one was created")
		got, err := s.Invitation(ctx, hash)
		require.NoError(t, err)
		require.Nil(t, got.UsedAt)
	})

	// A set-up link gives an existing person a passkey; an invitation for a
	// signed-in person's email makes them join; an invitation is never a
	// way into someone else's account.

	t.Run("LinksForPeopleWhoExist", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Existing")
		other := createOrg(t, s, "Elsewhere")
		ada := createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)
		cy := createPerson(t, s, other.ID, "cy@example.com", core.RoleOwner)

		setup := randomBytes(t, 32)
		_, err := s.CreateInvitation(core.WithActor(ctx, core.Operator), &core.CreateInvitationParams{Hash: setup,
			Kind: core.InvitationSetup, OrgID: org.ID, Email: ada.Email, PersonID: ada.ID, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		_, _, err = s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: setup, PersonID: cy.ID})
		require.ErrorIs(t, err, core.ErrNotFound, "another person cannot use ada's set-up link")
		cred := randomBytes(t, 16)
		p, sess, err := s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: setup,
			Passkey: &core.Passkey{CredentialID: cred, Name: "Laptop", Credential: []byte("{}")}})
		require.NoError(t, err)
		require.Equal(t, ada.ID, p.ID)
		require.Nil(t, sess, "no session was asked for")
		pk, err := s.PasskeyByCredentialID(ctx, cred)
		require.NoError(t, err)
		require.Equal(t, ada.ID, pk.PersonID)
		ms, err := s.Memberships(ctx, ada.ID)
		require.NoError(t, err)
		require.Len(t, ms, 1, "a set-up link adds no membership")

		invite := func(email string) []byte {
			h := randomBytes(t, 32)
			_, err := s.CreateInvitation(actingAs(ada.ID), &core.CreateInvitationParams{Hash: h, Kind: core.InvitationInvite,
				OrgID: org.ID, Email: email, Role: core.RoleMember, ExpiresAt: time.Now().Add(time.Hour)})
			require.NoError(t, err)
			return h
		}
		forCy := invite("cy@example.com")
		_, _, err = s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: forCy, Name: "Not Cy", PasswordHash: "x"})
		require.ErrorIs(t, err, core.ErrConflict, "a link cannot set an existing person's password")
		dan := createPerson(t, s, other.ID, "dan@example.com", core.RoleMember)
		_, _, err = s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: forCy, PersonID: dan.ID})
		require.ErrorIs(t, err, core.ErrNotFound, "an invitation for another email")
		_, err = s.Membership(ctx, dan.ID, org.ID)
		require.ErrorIs(t, err, core.ErrNotFound)

		joined, _, err := s.AcceptInvitation(actingAs(cy.ID), &core.AcceptInvitationParams{Hash: forCy, PersonID: cy.ID})
		require.NoError(t, err, "the refusals above left the link unused")
		require.Equal(t, cy.ID, joined.ID)
		m, err := s.Membership(ctx, cy.ID, org.ID)
		require.NoError(t, err)
		require.Equal(t, core.RoleMember, m.Role)
		_, err = s.PasswordHash(ctx, cy.ID)
		require.ErrorIs(t, err, core.ErrNotFound, "joining set no password")
	})

	// Two accepts of one link at once: exactly one takes it.

	t.Run("ConcurrentAcceptsOneWins", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Racing links")
		for round := range 8 {
			hash := randomBytes(t, 32)
			inv, err := s.CreateInvitation(ctx, &core.CreateInvitationParams{Hash: hash, Kind: core.InvitationInvite, OrgID: org.ID,
				Email: fmt.Sprintf("r%d@example.com", round), Role: core.RoleMember, ExpiresAt: time.Now().Add(time.Hour)})
			require.NoError(t, err)
			sessions := [][]byte{randomBytes(t, 32), randomBytes(t, 32)}
			accept := func(i int) func() error {
				return func() error {
					_, _, err := s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: hash, Name: "Racer",
						PasswordHash: fmt.Sprintf("hash-%d", i), Session: sessionParams(sessions[i], "", time.Hour)})
					return err
				}
			}
			errs := together(accept(0), accept(1))
			winner := -1
			for i, err := range errs {
				if err == nil {
					require.Equal(t, -1, winner, "round %d: both accepts won", round)
					winner = i
					continue
				}
				require.ErrorIs(t, err, core.ErrGone, "round %d", round)
			}
			require.NotEqual(t, -1, winner, "round %d: neither accept won", round)
			sess, err := s.Session(ctx, sessions[winner], time.Hour)
			require.NoError(t, err)
			require.Equal(t, inv.PersonID, sess.PersonID)
			_, err = s.Session(ctx, sessions[1-winner], time.Hour)
			require.ErrorIs(t, err, core.ErrNotFound, "round %d: the loser wrote nothing", round)
			got, err := s.PasswordHash(ctx, inv.PersonID)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("hash-%d", winner), got)
		}
	})
}

// runPeopleSessions: sessions and their expiries, and sign-in attempt budgets.
func runPeopleSessions[S peopleStore](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("SessionsExpire", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Sessions")
		other := createOrg(t, s, "Other")
		ada := createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)

		hash := randomBytes(t, 32)
		params := sessionParams(hash, ada.ID, time.Hour)
		params.OrgID = org.ID
		created, err := s.CreateSession(ctx, params)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(created.ID, "sess_"))
		require.Equal(t, "198.51.100.4", created.Address)
		got, err := s.Session(ctx, hash, time.Hour)
		require.NoError(t, err)
		require.Equal(t, created.ID, got.ID)
		require.Equal(t, org.ID, got.OrgID)
		require.True(t, got.LastSeenAt.Equal(created.LastSeenAt), "a use within the minute is not written")

		// Idle longer than the timeout: a timeout shorter than the time
		// since the last use, rather than a sleep.
		_, err = s.Session(ctx, hash, time.Microsecond)
		require.ErrorIs(t, err, core.ErrNotFound, "idle past the timeout")
		_, err = s.Session(ctx, hash, time.Hour)
		require.NoError(t, err, "the idle check removed nothing")

		require.NoError(t, s.SetSessionOrg(ctx, hash, other.ID))
		got, err = s.Session(ctx, hash, time.Hour)
		require.NoError(t, err)
		require.Equal(t, other.ID, got.OrgID)
		require.ErrorIs(t, s.SetSessionOrg(ctx, randomBytes(t, 32), org.ID), core.ErrNotFound)

		second, third := newSession(t, s, ada.ID, org.ID), newSession(t, s, ada.ID, org.ID)
		n, err := s.EndSessions(ctx, ada.ID, "", third)
		require.NoError(t, err)
		require.Equal(t, 2, n, "every session but the one kept")
		for _, h := range [][]byte{hash, second} {
			_, err = s.Session(ctx, h, time.Hour)
			require.ErrorIs(t, err, core.ErrNotFound)
		}
		require.NoError(t, s.DeleteSession(ctx, third))
		_, err = s.Session(ctx, third, time.Hour)
		require.ErrorIs(t, err, core.ErrNotFound, "signed out")
		_, err = s.Session(ctx, randomBytes(t, 32), time.Hour)
		require.ErrorIs(t, err, core.ErrNotFound, "a forged cookie")

		past := randomBytes(t, 32)
		p := sessionParams(past, ada.ID, time.Hour)
		p.ExpiresAt = time.Now().Add(-time.Minute)
		_, err = s.CreateSession(ctx, p)
		require.NoError(t, err)
		_, err = s.Session(ctx, past, 24*time.Hour)
		require.ErrorIs(t, err, core.ErrNotFound, "past its absolute end")
		_, err = s.CreateSession(ctx, sessionParams(randomBytes(t, 32), "person_missing", time.Hour))
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("AttemptBudgets", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		account := core.AttemptBudget{Subject: "account:ada@example.com", Limit: 3, Window: time.Hour}
		for i := range 3 {
			wait, err := s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{account}})
			require.NoError(t, err)
			require.Zero(t, wait, "attempt %d is within the budget", i+1)
		}
		wait, err := s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{account}})
		require.NoError(t, err)
		require.Positive(t, wait, "the fourth attempt in the hour is refused")
		require.LessOrEqual(t, wait, time.Hour/3, "room for one more comes back within a third of the window")

		// All or nothing: an attempt refused by one budget spends none of
		// the others.
		address := core.AttemptBudget{Subject: "address:192.0.2.1", Limit: 2, Window: time.Hour}
		for range 3 {
			wait, err = s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{address, account}})
			require.NoError(t, err)
			require.Positive(t, wait)
		}
		for i := range 2 {
			wait, err = s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{address}})
			require.NoError(t, err)
			require.Zero(t, wait, "the address's attempt %d: the refused attempts spent nothing", i+1)
		}
		wait, err = s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{address}})
		require.NoError(t, err)
		require.Positive(t, wait)

		// At once, from many callers: exactly the budget is spent.
		burst := core.AttemptBudget{Subject: "account:burst@example.com", Limit: 5, Window: time.Hour}
		fns := make([]func() error, 20)
		var mu sync.Mutex
		spent := 0
		for i := range fns {
			fns[i] = func() error {
				wait, err := s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{burst}})
				if err == nil && wait == 0 {
					mu.Lock()
					spent++
					mu.Unlock()
				}
				return err
			}
		}
		for _, err := range together(fns...) {
			require.NoError(t, err)
		}
		require.Equal(t, 5, spent)

		_, err = s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{{Subject: "x", Limit: 0, Window: time.Hour}}})
		require.Error(t, err, "a budget of nothing is a mistake")
	})
}

// runPeopleAudit: the creator's role a key carries, and the audit row of every change.
func runPeopleAudit[S peopleStore](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("KeysCarryTheirCreatorsRole", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Keys by people")
		ada := createPerson(t, s, org.ID, "ada@example.com", core.RoleOwner)
		bob := createPerson(t, s, org.ID, "bob@example.com", core.RoleOwner)
		secret, hash := core.NewKeySecret(false)
		k, err := s.CreateKey(actingAs(bob.ID), &core.CreateKeyParams{OrgID: org.ID, Hash: hash, Hint: core.KeyHint(secret), PersonID: bob.ID})
		require.NoError(t, err)
		require.Equal(t, bob.ID, k.PersonID)
		roleOfKey := func() core.Role {
			got, _, err := s.KeyByHash(ctx, hash)
			require.NoError(t, err)
			require.Equal(t, bob.ID, got.PersonID)
			return got.CreatorRole
		}
		require.Equal(t, core.RoleOwner, roleOfKey())
		_, err = s.SetRole(actingAs(ada.ID), &core.SetRoleParams{OrgID: org.ID, PersonID: bob.ID, Role: core.RoleMember})
		require.NoError(t, err)
		require.Equal(t, core.RoleMember, roleOfKey(), "the creator's current role")
		require.NoError(t, s.RemoveMember(actingAs(ada.ID), org.ID, bob.ID))
		require.Equal(t, core.Role(""), roleOfKey(), "a creator who left has no role")

		keys, err := s.ListKeys(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, keys, 1)
		require.Equal(t, bob.ID, keys[0].PersonID)
		_, opHash := core.NewKeySecret(false)
		opKey, err := s.CreateKey(core.WithActor(ctx, core.Operator), &core.CreateKeyParams{OrgID: org.ID, Hash: opHash, Hint: "ccl_live_…"})
		require.NoError(t, err)
		require.Empty(t, opKey.PersonID, "the operator's key has no person")
		require.Empty(t, opKey.CreatorRole)
	})

	// Every people change writes one row in the organisation it was made
	// in, naming who, what and to what, and none holds a secret.

	t.Run("AuditRows", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Audited")
		second := createOrg(t, s, "Second")
		op := core.WithActor(ctx, core.Operator)
		ada, err := s.CreatePerson(op, &core.CreatePersonParams{Email: "ada@example.com", Name: "Ada", OrgID: org.ID, Role: core.RoleOwner})
		require.NoError(t, err)
		require.NoError(t, s.AddMember(op, second.ID, ada.ID, core.RoleOwner))
		setupHash := randomBytes(t, 32)
		_, err = s.CreateInvitation(op, &core.CreateInvitationParams{Hash: setupHash, Kind: core.InvitationSetup, OrgID: org.ID,
			Email: ada.Email, PersonID: ada.ID, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)

		inviteHash := randomBytes(t, 32)
		inv, err := s.CreateInvitation(actingAs(ada.ID), &core.CreateInvitationParams{Hash: inviteHash, Kind: core.InvitationInvite,
			OrgID: org.ID, Email: "bob@example.com", Role: core.RoleMember, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		phc := "$argon2id$v=19$m=65536,t=3,p=1$c2VjcmV0c2FsdA$c2VjcmV0aGFzaA"
		sessHash := randomBytes(t, 32)
		bob, _, err := s.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: inviteHash, Name: "Bob", PasswordHash: phc,
			Session: sessionParams(sessHash, "", time.Hour)})
		require.NoError(t, err)
		bobCtx := core.WithActor(ctx, core.Actor{Kind: core.ActorPerson, ID: bob.ID, Address: "198.51.100.4"})

		_, err = s.SetRole(actingAs(ada.ID), &core.SetRoleParams{OrgID: org.ID, PersonID: bob.ID, Role: core.RoleOwner})
		require.NoError(t, err)
		cred, record := randomBytes(t, 16), randomBytes(t, 64)
		pk, err := s.AddPasskey(actingAs(ada.ID), &core.Passkey{PersonID: ada.ID, CredentialID: cred, Name: "Laptop", Credential: record})
		require.NoError(t, err)
		require.NoError(t, s.RemovePasskey(actingAs(ada.ID), ada.ID, pk.ID))
		require.NoError(t, s.SetPassword(bobCtx, bob.ID, phc+"2", sessHash))
		n, err := s.EndSessions(actingAs(ada.ID), bob.ID, org.ID, nil)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.NoError(t, s.RemoveMember(actingAs(ada.ID), org.ID, bob.ID))

		type row struct{ Action, ActorKind, ActorID, Address, Object, Detail string }
		rowsOf := func(orgID string) []row {
			entries, err := s.Audit(ctx, &core.AuditQuery{OrgID: orgID})
			require.NoError(t, err)
			var out []row
			for _, e := range entries {
				require.Equal(t, orgID, e.OrgID)
				if strings.HasPrefix(e.Action, "key.") || strings.HasPrefix(e.Action, "org.") {
					continue // not this section's
				}
				out = append(out, row{e.Action, e.Actor.Kind, e.Actor.ID, e.Actor.Address, e.Object, e.Detail})
				for _, secret := range []string{phc, hex.EncodeToString(setupHash), hex.EncodeToString(inviteHash),
					hex.EncodeToString(sessHash), hex.EncodeToString(cred), hex.EncodeToString(record), string(record)} {
					for _, field := range []string{e.Object, e.Detail, e.Actor.ID} {
						require.NotContains(t, field, secret, "an audit row holds a secret: %+v", e)
					}
				}
			}
			return out
		}
		const adaAt, bobAt = "203.0.113.7", "198.51.100.4"
		person := core.ActorPerson
		require.Equal(t, []row{
			{core.AuditPersonJoined, core.ActorOperator, "", "", ada.ID, "ada@example.com as owner"},
			{core.AuditSetupLinkCreated, core.ActorOperator, "", "", ada.ID, "ada@example.com"},
			{core.AuditPersonInvited, person, ada.ID, adaAt, inv.PersonID, "bob@example.com as member"},
			{core.AuditPersonJoined, person, bob.ID, bobAt, bob.ID, "bob@example.com as member"},
			{core.AuditPasswordSet, person, bob.ID, bobAt, bob.ID, ""},
			{core.AuditPersonRole, person, ada.ID, adaAt, bob.ID, "member → owner"},
			{core.AuditPasskeyAdded, person, ada.ID, adaAt, pk.ID, "Laptop"},
			{core.AuditPasskeyRemoved, person, ada.ID, adaAt, pk.ID, "Laptop"},
			{core.AuditPasswordSet, person, bob.ID, bobAt, bob.ID, ""},
			{core.AuditSessionsEnded, person, ada.ID, adaAt, bob.ID, "1 ended"},
			{core.AuditPersonRemoved, person, ada.ID, adaAt, bob.ID, "was owner"},
		}, rowsOf(org.ID))
		require.Equal(t, []row{
			{core.AuditPersonJoined, core.ActorOperator, "", "", ada.ID, "ada@example.com as owner"},
			{core.AuditPasskeyAdded, person, ada.ID, adaAt, pk.ID, "Laptop"},
			{core.AuditPasskeyRemoved, person, ada.ID, adaAt, pk.ID, "Laptop"},
		}, rowsOf(second.ID), "a sign-in change is recorded in each of the person's organisations, and nothing else")

		all, err := s.Audit(ctx, &core.AuditQuery{OrgID: org.ID})
		require.NoError(t, err)
		firstTwo, err := s.Audit(ctx, &core.AuditQuery{OrgID: org.ID, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, all[:2], firstTwo, "the oldest rows first")
		last := all[len(all)-1]
		since, err := s.Audit(ctx, &core.AuditQuery{OrgID: org.ID, Since: last.At})
		require.NoError(t, err)
		require.NotEmpty(t, since)
		for _, e := range since {
			require.False(t, e.At.Before(last.At))
		}
		require.Equal(t, last.ID, since[len(since)-1].ID)
		require.Less(t, len(since), len(all))

		// A refused change writes no row.
		_, err = s.SetRole(actingAs(ada.ID), &core.SetRoleParams{OrgID: org.ID, PersonID: ada.ID, Role: core.RoleMember})
		require.ErrorIs(t, err, core.ErrLastOwner)
		after, err := s.Audit(ctx, &core.AuditQuery{OrgID: org.ID})
		require.NoError(t, err)
		require.Len(t, after, len(all))
	})
}

// createPerson creates a person in orgID with role.
func createPerson(t *testing.T, s core.People, orgID, email string, role core.Role) *core.Person {
	t.Helper()
	p, err := s.CreatePerson(context.Background(), &core.CreatePersonParams{Email: email, Name: strings.Split(email, "@")[0],
		OrgID: orgID, Role: role})
	require.NoError(t, err)
	return p
}

// requireOwners checks that the organisation's owners are exactly ids.
func requireOwners(t *testing.T, s core.People, orgID string, ids ...string) {
	t.Helper()
	members, err := s.Members(context.Background(), orgID)
	require.NoError(t, err)
	var owners []string
	for _, m := range members {
		if m.Role == core.RoleOwner {
			owners = append(owners, m.ID)
		}
	}
	require.ElementsMatch(t, ids, owners)
}

// sessionParams are a session's for personID, ending in ttl.
func sessionParams(hash []byte, personID string, ttl time.Duration) *core.CreateSessionParams {
	return &core.CreateSessionParams{Hash: hash, PersonID: personID, Address: "198.51.100.4", ExpiresAt: time.Now().Add(ttl)}
}

// newSession creates a live session for personID in orgID and returns its
// hash.
func newSession(t *testing.T, s core.People, personID, orgID string) []byte {
	t.Helper()
	hash := randomBytes(t, 32)
	p := sessionParams(hash, personID, time.Hour)
	p.OrgID = orgID
	_, err := s.CreateSession(context.Background(), p)
	require.NoError(t, err)
	return hash
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// together runs fns at once (each released by one signal) and returns
// their errors in order.
func together(fns ...func() error) []error {
	errs := make([]error, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			<-start
			defer func() {
				if r := recover(); r != nil {
					errs[i] = errors.New(fmt.Sprint("panic: ", r))
				}
			}()
			errs[i] = fn()
		})
	}
	close(start)
	wg.Wait()
	return errs
}
