package peopletest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/policies"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// cheap are argon2id parameters that keep tests fast; the benchmark uses
// the defaults.
var cheap = people.Argon2Params{Time: 1, MemoryKiB: 1024, Threads: 1}

type bundle struct {
	pool   *pgxpool.Pool
	store  *pgstore.Store
	acc    *access.Service
	svc    *people.Service
	org    *core.Org
	owner  *access.Principal
	member *access.Principal
}

var ctx = context.Background()

func setup(t testing.TB, cfg people.Config) *bundle {
	t.Helper()
	return setupWithPolicies(t, cfg, "")
}

// setupWithPolicies is setup with the policies of policyDir ("" for the
// embedded ones).
func setupWithPolicies(t testing.TB, cfg people.Config, policyDir string) *bundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	store := pgstore.New(pool)
	authz, err := policies.New(ctx, policies.Config{Dir: policyDir})
	require.NoError(t, err)
	acc, err := access.New(access.Config{}, store, authz, store)
	require.NoError(t, err)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := byok.NewSealer(key)
	require.NoError(t, err)
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://localhost:8080"
	}
	if cfg.Argon2 == (people.Argon2Params{}) {
		cfg.Argon2 = cheap
	}
	svc, err := people.New(cfg, people.Deps{Store: store, Orgs: store, Keys: store, Access: acc, Credentials: store,
		Maker: byok.Maker{Sealer: sealer}})
	require.NoError(t, err)
	b := &bundle{pool: pool, store: store, acc: acc, svc: svc}
	b.org, _, err = store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme Research", Ticker: "ACME"})
	require.NoError(t, err)
	b.owner = b.person(t, "olive@acme.example", core.RoleOwner)
	b.member = b.person(t, "mia@acme.example", core.RoleMember)
	return b
}

// person creates someone in the organisation with a password ("a long
// passphrase of <email>") and returns them as a signed-in principal.
func (b *bundle) person(t testing.TB, email string, role core.Role) *access.Principal {
	t.Helper()
	p, link, err := b.svc.CreatePerson(core.WithActor(ctx, core.Operator), b.org.ID, email, "Someone", role)
	require.NoError(t, err)
	_, err = b.svc.AcceptWithPassword(ctx, secretOf(link), "", "a long passphrase of "+email, "127.0.0.1")
	require.NoError(t, err)
	return &access.Principal{Kind: core.PrincipalSession, Person: p, Role: role, Org: b.org, Address: "127.0.0.1"}
}

func secretOf(link string) string {
	for i := len(link) - 1; i >= 0; i-- {
		if link[i] == '/' {
			return link[i+1:]
		}
	}
	return link
}

func code(t testing.TB, err error) core.Code {
	t.Helper()
	var ce *core.Error
	require.True(t, errors.As(err, &ce), "want a *core.Error, got %v", err)
	return ce.Code
}

func fieldOf(t testing.TB, err error) string {
	t.Helper()
	var fe *people.FieldError
	require.True(t, errors.As(err, &fe), "want a *people.FieldError, got %v", err)
	return fe.Field
}

func TestPasswordSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	s, err := b.svc.SignInPassword(ctx, " MIA@acme.example ", "a long passphrase of mia@acme.example", "203.0.113.1")
	require.NoError(t, err)
	require.Equal(t, b.member.Person.ID, s.Person.ID)
	p, _, err := b.svc.Principal(ctx, s.Secret, "203.0.113.1")
	require.NoError(t, err)
	require.Equal(t, core.RoleMember, p.Role)
	require.Equal(t, b.org.ID, p.Org.ID)

	_, wrong := b.svc.SignInPassword(ctx, "mia@acme.example", "not the passphrase at all", "203.0.113.1")
	_, unknown := b.svc.SignInPassword(ctx, "nobody@acme.example", "not the passphrase at all", "203.0.113.1")
	require.Equal(t, "password", fieldOf(t, wrong))
	require.Equal(t, wrong.Error(), unknown.Error(), "an unknown email answers exactly as a wrong password")

	_, _, err = b.svc.Principal(ctx, "forged-cookie", "203.0.113.1")
	require.ErrorIs(t, err, core.ErrNotFound)
	require.NoError(t, b.svc.SignOut(ctx, s.Secret))
	_, _, err = b.svc.Principal(ctx, s.Secret, "203.0.113.1")
	require.ErrorIs(t, err, core.ErrNotFound, "signed out")
}

// Attempts are counted before any hashing: past the account's budget a
// sign-in is refused without computing a hash.
func TestAttemptLimitIsCheckedBeforeHashing(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{AccountAttempts: 3, AddressAttempts: 100})
	before, _ := b.svc.HashStats()
	for range 3 {
		_, err := b.svc.SignInPassword(ctx, "mia@acme.example", "wrong guess number one", "203.0.113.2")
		require.Equal(t, "password", fieldOf(t, err))
	}
	after, _ := b.svc.HashStats()
	require.Equal(t, before+3, after, "each attempt within the budget hashed once")
	_, err := b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.3")
	require.Equal(t, core.CodeRateLimitExceeded, code(t, err), "the account's budget holds from another address too")
	var ce *core.Error
	require.True(t, errors.As(err, &ce))
	require.Positive(t, ce.RetryAfter)
	refused, _ := b.svc.HashStats()
	require.Equal(t, after, refused, "a refused attempt computes no hash")

	// Per address: another account from one address.
	b2 := setup(t, people.Config{AccountAttempts: 100, AddressAttempts: 2})
	for i := range 2 {
		_, err := b2.svc.SignInPassword(ctx, fmt.Sprintf("guess%d@acme.example", i), "wrong guess number one", "203.0.113.4")
		require.Equal(t, "password", fieldOf(t, err))
	}
	_, err = b2.svc.SignInPassword(ctx, "olive@acme.example", "a long passphrase of olive@acme.example", "203.0.113.4")
	require.Equal(t, core.CodeRateLimitExceeded, code(t, err))
}

// At most MaxConcurrentHashes hashes run at once, however many sign-ins
// arrive together.
func TestHashesAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{MaxConcurrentHashes: 1, AccountAttempts: 100, AddressAttempts: 100})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := b.svc.SignInPassword(ctx, fmt.Sprintf("someone%d@acme.example", i), "a wrong but long password", "203.0.113.5")
			require.Equal(t, "password", fieldOf(t, err))
		})
	}
	wg.Wait()
	total, peak := b.svc.HashStats()
	require.GreaterOrEqual(t, total, int64(8))
	require.Equal(t, int64(1), peak, "never more than one hash at once")
}

func TestPasswordRules(t *testing.T) {
	t.Parallel()
	for pw, ok := range map[string]bool{
		"short":                    false,
		"password1234":             false, // common
		"PASSWORD1234":             false, // common, in any case
		"mia@acme.example":         false, // too short anyway
		"a perfectly fine phrase":  true,
		string(make([]byte, 2000)): false,
	} {
		err := people.CheckPassword(pw, "mia@acme.example")
		if ok {
			require.NoError(t, err, pw)
		} else {
			require.Equal(t, "password", fieldOf(t, err), pw)
		}
	}
	require.Error(t, people.CheckPassword("someone.long@acme.example", "Someone.Long@acme.example"), "not the email")
}

func TestChangePasswordEndsOtherSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	here, err := b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.6")
	require.NoError(t, err)
	there, err := b.svc.SignInPassword(ctx, "mia@acme.example", "a long passphrase of mia@acme.example", "203.0.113.7")
	require.NoError(t, err)
	err = b.svc.ChangePassword(ctx, b.member, "not my password", "a brand new passphrase", here.Secret)
	require.Equal(t, "current", fieldOf(t, err))
	require.NoError(t, b.svc.ChangePassword(ctx, b.member, "a long passphrase of mia@acme.example", "a brand new passphrase", here.Secret))
	_, _, err = b.svc.Principal(ctx, here.Secret, "")
	require.NoError(t, err, "the session that changed it stays")
	_, _, err = b.svc.Principal(ctx, there.Secret, "")
	require.ErrorIs(t, err, core.ErrNotFound, "every other session ended")
	_, err = b.svc.SignInPassword(ctx, "mia@acme.example", "a brand new passphrase", "203.0.113.6")
	require.NoError(t, err)
}

func TestLinks(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	link, inv, err := b.svc.Invite(ctx, b.owner, "newcomer@acme.example", core.RoleMember)
	require.NoError(t, err)
	require.Equal(t, core.InvitationInvite, inv.Kind)
	secret := secretOf(link)
	v, err := b.svc.Link(ctx, secret)
	require.NoError(t, err)
	require.Equal(t, "Acme Research", v.OrgName)
	require.False(t, v.Existing)

	// Bad input uses nothing.
	_, err = b.svc.AcceptWithPassword(ctx, secret, "", "a fine long passphrase", "")
	require.Equal(t, "name", fieldOf(t, err))
	_, err = b.svc.AcceptWithPassword(ctx, secret, "Newcomer", "short", "")
	require.Equal(t, "password", fieldOf(t, err))
	s, err := b.svc.AcceptWithPassword(ctx, secret, "Newcomer", "a fine long passphrase", "")
	require.NoError(t, err)
	require.Equal(t, "newcomer@acme.example", s.Person.Email)
	_, err = b.svc.AcceptWithPassword(ctx, secret, "Newcomer", "a fine long passphrase", "")
	require.ErrorIs(t, err, core.ErrGone, "single use")
	_, err = b.svc.Link(ctx, "forged")
	require.ErrorIs(t, err, core.ErrNotFound)

	// An existing person joins signed in, not by registering.
	other, _, err := b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other Co", Ticker: "OTHR"})
	require.NoError(t, err)
	otherOwner, _, err := b.svc.CreatePerson(core.WithActor(ctx, core.Operator), other.ID, "otto@other.example", "Otto", core.RoleOwner)
	require.NoError(t, err)
	op := &access.Principal{Kind: core.PrincipalSession, Person: otherOwner, Role: core.RoleOwner, Org: other}
	link2, _, err := b.svc.Invite(ctx, op, "mia@acme.example", core.RoleOwner)
	require.NoError(t, err)
	v, err = b.svc.Link(ctx, secretOf(link2))
	require.NoError(t, err)
	require.True(t, v.Existing)
	_, err = b.svc.AcceptWithPassword(ctx, secretOf(link2), "", "someone else's passphrase", "")
	require.Equal(t, "link", fieldOf(t, err))
	_, err = b.svc.AcceptSignedIn(ctx, secretOf(link2), b.owner)
	require.ErrorIs(t, err, core.ErrNotFound, "another person's invitation")
	m, err := b.svc.AcceptSignedIn(ctx, secretOf(link2), b.member)
	require.NoError(t, err)
	require.Equal(t, other.ID, m.OrgID)
	ms, err := b.svc.Memberships(ctx, b.member)
	require.NoError(t, err)
	require.Len(t, ms, 2, "one person, two organisations")

	_, _, err = b.svc.Invite(ctx, b.owner, "mia@acme.example", core.RoleMember)
	require.Equal(t, "email", fieldOf(t, err), "already in the organisation")
	_, _, err = b.svc.Invite(ctx, b.owner, "not an email", core.RoleMember)
	require.Equal(t, "email", fieldOf(t, err))
}

// The roles, through the policy, at the service.
func TestRolesAtTheService(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	_, _, err := b.svc.Invite(ctx, b.member, "x@acme.example", core.RoleMember)
	require.Equal(t, core.CodeForbidden, code(t, err), "a member may not invite")
	_, err = b.svc.SetRole(ctx, b.member, b.owner.Person.ID, core.RoleMember)
	require.Equal(t, core.CodeForbidden, code(t, err))
	_, err = b.svc.Audit(ctx, b.member, &core.AuditQuery{})
	require.Equal(t, core.CodeForbidden, code(t, err), "a member may not read the audit trail")
	_, err = b.svc.SetBYOK(ctx, b.member, core.ProviderOpenAI, "sk-test-0123456789abcdef0123", "", "")
	require.Equal(t, core.CodeForbidden, code(t, err), "BYOK is an owner's")
	require.Equal(t, core.CodeForbidden, code(t, b.svc.RemoveBYOK(ctx, b.member, core.ProviderOpenAI)))
	members, err := b.svc.Members(ctx, b.member)
	require.NoError(t, err, "a member sees who is in the organisation")
	require.Len(t, members, 2)

	c, err := b.svc.SetBYOK(ctx, b.owner, core.ProviderOpenAI, "sk-test-0123456789abcdef0123", "", "")
	require.NoError(t, err)
	require.Equal(t, core.ProviderOpenAI, c.Provider)
	_, err = b.svc.SetBYOK(ctx, b.owner, core.ProviderOpenAI, "sk-test-replaced-0123456789abcdef", "", "")
	require.NoError(t, err, "replace")
	require.NoError(t, b.svc.RemoveBYOK(ctx, b.owner, core.ProviderOpenAI))

	// Keys: a member's keys carry no scope the member's role lacks, and
	// the role bounds them at every use.
	_, _, err = b.svc.CreateKey(ctx, b.member, &people.NewKey{Name: "bad", Scopes: []string{core.ScopeDeliberate, "admin"}})
	require.Equal(t, core.CodeForbidden, code(t, err))
	secret, key, err := b.svc.CreateKey(ctx, b.member, &people.NewKey{Name: "mine"})
	require.NoError(t, err)
	require.Equal(t, b.member.Person.ID, key.PersonID)
	kp, err := b.acc.Authenticate(ctx, secret)
	require.NoError(t, err)
	require.NoError(t, b.acc.Authorize(ctx, kp, core.ActionCertifyRead, nil, ""))
	require.Equal(t, core.CodeForbidden, code(t, b.acc.Authorize(ctx, kp, core.ActionCertifyCreate, nil, "")),
		"the key carries the certify scope, but its creator's role may not launch certifications")
	ownersKey, okey, err := b.svc.CreateKey(ctx, b.owner, &people.NewKey{Name: "owner's"})
	require.NoError(t, err)
	_ = ownersKey
	_, err = b.svc.RevokeKey(ctx, b.member, okey.ID)
	require.Equal(t, core.CodeForbidden, code(t, err), "a member revokes only their own keys")
	_, err = b.svc.RevokeKey(ctx, b.member, key.ID)
	require.NoError(t, err)
	_, err = b.svc.RevokeKey(ctx, b.owner, okey.ID)
	require.NoError(t, err)

	// A member who leaves: their key can do nothing.
	secret2, _, err := b.svc.CreateKey(ctx, b.member, &people.NewKey{Name: "left behind"})
	require.NoError(t, err)
	require.NoError(t, b.svc.RemoveMember(ctx, b.owner, b.member.Person.ID))
	kp2, err := b.acc.Authenticate(ctx, secret2)
	require.NoError(t, err)
	require.Equal(t, core.CodeForbidden, code(t, b.acc.Authorize(ctx, kp2, core.ActionModelsRead, nil, "")))

	rows, err := b.svc.Audit(ctx, b.owner, &core.AuditQuery{})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Action] = true
		if r.Actor.Kind == core.ActorPerson {
			require.Contains(t, []string{b.owner.Person.ID, b.member.Person.ID}, r.Actor.ID)
		}
	}
	for _, a := range []string{core.AuditPersonJoined, core.AuditPasswordSet, core.AuditBYOKSet, core.AuditBYOKRemoved,
		core.AuditKeyCreated, core.AuditKeyRevoked, core.AuditPersonRemoved, core.AuditSetupLinkCreated} {
		require.True(t, seen[a], "the audit trail has %s", a)
	}
}

// The last owner at the service: two owners demoting each other at the
// same moment leave one owner, and the other answer is last_owner.
func TestLastOwnerRaceAtTheService(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	second := b.person(t, "otto@acme.example", core.RoleOwner)
	_, err := b.svc.SetRole(ctx, b.owner, b.member.Person.ID, core.RoleMember)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { _, errs[0] = b.svc.SetRole(ctx, b.owner, second.Person.ID, core.RoleMember) })
	wg.Go(func() { _, errs[1] = b.svc.SetRole(ctx, second, b.owner.Person.ID, core.RoleMember) })
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			require.Equal(t, core.CodeLastOwner, code(t, err))
			failed++
		}
	}
	require.Equal(t, 1, failed)
	require.Equal(t, 409, core.InfoFor(core.CodeLastOwner).Status)
}

// Text no query can carry (a NUL, as a page path's %00 decodes to) is an
// unknown thing or a wrong sign-in — never a failed query's 503.
func TestTextNoQueryCanCarry(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	_, err := b.svc.SignInPassword(ctx, "mia\x00@acme.example", "a long passphrase of mia@acme.example", "203.0.113.50")
	require.Equal(t, "password", fieldOf(t, err))
	_, err = b.svc.SignInPassword(ctx, "mia@acme.example", "a long\x00passphrase", "203.0.113.50")
	require.Equal(t, "password", fieldOf(t, err))
	require.ErrorIs(t, b.svc.ChooseOrg(ctx, "secret", b.member, "org_\x00"), core.ErrNotFound)
	_, err = b.svc.SetRole(ctx, b.owner, "person_\x00", core.RoleMember)
	require.ErrorIs(t, err, core.ErrNotFound)
	require.ErrorIs(t, b.svc.RemoveMember(ctx, b.owner, "person_\xff"), core.ErrNotFound)
	_, err = b.svc.EndSessions(ctx, b.owner, "person_\x00")
	require.ErrorIs(t, err, core.ErrNotFound)
	require.ErrorIs(t, b.svc.RemovePasskey(ctx, b.member, "passkey_\x00"), core.ErrNotFound)
	require.Equal(t, "provider", fieldOf(t, b.svc.RemoveBYOK(ctx, b.owner, "open\x00ai")))
	require.Equal(t, "password", fieldOf(t, people.CheckPassword("a long enough\x00password", "")))
}
