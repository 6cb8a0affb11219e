package policies_test

import (
	"context"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/policies"
)

var updateRoles = flag.Bool("update-roles", false, "rewrite the role table of docs/people.md from the policy")

const (
	rolesBegin = "<!-- roles:begin (generated from policies/authz.rego: go test ./policies -run TestRoleTableDoc -update-roles) -->"
	rolesEnd   = "<!-- roles:end -->"
)

// roleTable renders the policy's role_grants as the docs print it: one row
// per action, one column per role.
func roleTable(t *testing.T) string {
	t.Helper()
	src, err := policies.FS.ReadFile("authz.rego")
	require.NoError(t, err)
	rs, err := rego.New(rego.Query("data.conclave.authz.role_grants"), rego.Module("authz.rego", string(src))).Eval(context.Background())
	require.NoError(t, err)
	require.Len(t, rs, 1)
	grants := rs[0].Expressions[0].Value.(map[string]any)
	actions := make([]string, 0, len(grants))
	for a := range grants {
		actions = append(actions, a)
	}
	slices.Sort(actions)
	var b strings.Builder
	b.WriteString("| action | owner | member |\n|---|---|---|\n")
	cell := func(roles map[string]any, role core.Role) string {
		switch roles[string(role)] {
		case "any":
			return "yes"
		case "own":
			return "their own"
		}
		return "no"
	}
	for _, a := range actions {
		roles := grants[a].(map[string]any)
		b.WriteString("| `" + a + "` | " + cell(roles, core.RoleOwner) + " | " + cell(roles, core.RoleMember) + " |\n")
	}
	return b.String()
}

// The role table of docs/people.md is the policy's, row for row.
func TestRoleTableDoc(t *testing.T) {
	t.Parallel()
	const path = "../docs/people.md"
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	before, rest, ok := strings.Cut(string(doc), rolesBegin)
	require.True(t, ok, "docs/people.md has the roles:begin marker")
	_, after, ok := strings.Cut(rest, rolesEnd)
	require.True(t, ok, "docs/people.md has the roles:end marker")
	want := before + rolesBegin + "\n" + roleTable(t) + rolesEnd + after
	if *updateRoles {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, string(doc), "docs/people.md's role table is out of date: go test ./policies -run TestRoleTableDoc -update-roles")
}

// A policy author tightens the table with --policy-dir: in this copy of
// the policies members may not launch test runs.
func TestTightenedRoleTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := policies.FS.ReadFile("authz.rego")
	require.NoError(t, err)
	tightened := strings.Replace(string(src), `"tests.create": {"owner": "any", "member": "any"},`, `"tests.create": {"owner": "any"},`, 1)
	require.NotEqual(t, string(src), tightened)
	require.NoError(t, os.WriteFile(dir+"/authz.rego", []byte(tightened), 0o644))
	spec, err := policies.FS.ReadFile("modespec.rego")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dir+"/modespec.rego", spec, 0o644))

	member := &core.AuthzInput{Action: core.ActionTestsCreate, Principal: core.PrincipalForPerson(core.PrincipalSession),
		Org: &core.AuthzOrg{ID: "org_a", Plan: core.PlanStandard}, Person: &core.AuthzPerson{ID: "person_m", Role: core.RoleMember}}
	for _, tc := range []struct {
		dir   string
		allow bool
	}{{"", true}, {dir, false}} {
		e, err := policies.New(context.Background(), policies.Config{Dir: tc.dir})
		require.NoError(t, err)
		d, err := e.Decide(context.Background(), member)
		require.NoError(t, err)
		require.Equal(t, tc.allow, d.Allow, "dir %q", tc.dir)
		if !tc.allow {
			require.Equal(t, core.CodeForbidden, d.Code)
		}
	}
}
