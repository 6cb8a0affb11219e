package peopletest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/policies"
)

// The audit rows of the changes people make: who, in which organisation,
// what, on which object — and never a secret.
func TestAuditRowsOfPeopleChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	owner := core.Actor{Kind: core.ActorPerson, ID: b.owner.Person.ID, Address: b.owner.Address}

	link, _, err := b.svc.Invite(ctx, b.owner, "newcomer@acme.example", core.RoleMember)
	require.NoError(t, err)
	s, err := b.svc.AcceptWithPassword(ctx, secretOf(link), "Newcomer", "the newcomer's own phrase", "203.0.113.30")
	require.NoError(t, err)
	newcomer := s.Person.ID
	_, err = b.svc.SetRole(ctx, b.owner, newcomer, core.RoleOwner)
	require.NoError(t, err)
	keySecret, key, err := b.svc.CreateKey(ctx, b.owner, &people.NewKey{Name: "ci", Scopes: []string{core.ScopeDeliberate}})
	require.NoError(t, err)
	_, err = b.svc.RevokeKey(ctx, b.owner, key.ID)
	require.NoError(t, err)
	const apiKey = "sk-test-secret-0123456789abcdef"
	_, err = b.svc.SetBYOK(ctx, b.owner, core.ProviderOpenAI, apiKey, "", "")
	require.NoError(t, err)
	require.NoError(t, b.svc.RemoveBYOK(ctx, b.owner, core.ProviderOpenAI))
	require.NoError(t, b.svc.ChangePassword(ctx, b.member, "a long passphrase of mia@acme.example", "mia's brand new phrase", ""))
	require.NoError(t, b.svc.RemoveMember(ctx, b.owner, b.member.Person.ID))

	rows, err := b.svc.Audit(ctx, b.owner, &core.AuditQuery{})
	require.NoError(t, err)
	for _, want := range []struct {
		action, object string
		actor          core.Actor
	}{
		{core.AuditSetupLinkCreated, b.owner.Person.ID, core.Operator},
		{core.AuditPersonInvited, newcomer, owner},
		{core.AuditPersonRole, newcomer, owner},
		{core.AuditKeyCreated, key.ID, owner},
		{core.AuditKeyRevoked, key.ID, owner},
		{core.AuditBYOKSet, core.ProviderOpenAI, owner},
		{core.AuditBYOKRemoved, core.ProviderOpenAI, owner},
		{core.AuditPasswordSet, b.member.Person.ID, core.Actor{Kind: core.ActorPerson, ID: b.member.Person.ID, Address: b.member.Address}},
		{core.AuditPersonRemoved, b.member.Person.ID, owner},
	} {
		found := false
		for _, r := range rows {
			if r.Action == want.action && r.Object == want.object && r.Actor == want.actor {
				found = true
				require.Equal(t, b.org.ID, r.OrgID)
				require.False(t, r.At.IsZero())
			}
		}
		require.True(t, found, "an audit row %s of %s by %+v", want.action, want.object, want.actor)
	}
	joined := 0
	for _, r := range rows {
		if r.Action == core.AuditPersonJoined && r.Object == newcomer {
			joined++
		}
		for _, secret := range []string{secretOf(link), keySecret, apiKey, "the newcomer's own phrase", "mia's brand new phrase", s.Secret} {
			require.NotContains(t, r.Object+" "+r.Detail, secret, "no secret in the audit trail (%s)", r.Action)
		}
	}
	require.Equal(t, 1, joined, "the newcomer joined once")
}

// tightenedPolicies writes the embedded policies to a directory, with the
// role table's member cell of certify.read removed: a member is granted no
// action that needs the certify scope.
func tightenedPolicies(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"authz.rego", "modespec.rego"} {
		src, err := fs.ReadFile(policies.FS, name)
		require.NoError(t, err)
		text := string(src)
		if name == "authz.rego" {
			const cell = `"certify.read": {"owner": "any", "member": "any"},`
			require.Contains(t, text, cell)
			text = strings.Replace(text, cell, `"certify.read": {"owner": "any"},`, 1)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	return dir
}

// A key's default scopes are the ones the policy lets its creator's role
// grant; a tightened policy narrows them, and asking for more is refused.
func TestKeyScopesFollowThePolicy(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	_, key, err := b.svc.CreateKey(ctx, b.member, &people.NewKey{Name: "everything I may"})
	require.NoError(t, err)
	require.ElementsMatch(t, core.AllScopes, key.Scopes, "by default a member may grant every scope")

	tb := setupWithPolicies(t, people.Config{}, tightenedPolicies(t))
	_, key, err = tb.svc.CreateKey(ctx, tb.member, &people.NewKey{Name: "everything I may"})
	require.NoError(t, err)
	require.NotContains(t, key.Scopes, core.ScopeCertify)
	require.Contains(t, key.Scopes, core.ScopeDeliberate)
	require.Equal(t, tb.member.Person.ID, key.PersonID)
	_, _, err = tb.svc.CreateKey(ctx, tb.member, &people.NewKey{Name: "certify", Scopes: []string{core.ScopeCertify}})
	require.Equal(t, core.CodeForbidden, code(t, err))
	require.Contains(t, err.Error(), core.ScopeCertify)
	_, key, err = tb.svc.CreateKey(ctx, tb.owner, &people.NewKey{Name: "owner's"})
	require.NoError(t, err)
	require.ElementsMatch(t, core.AllScopes, key.Scopes, "the owner's role is not tightened")
}
