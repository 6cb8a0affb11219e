package policies_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/policies"
)

var update = flag.Bool("update", false, "rewrite docs/people.md's role table and testdata/tightened from the policy")

const (
	peopleDoc  = "../docs/people.md"
	rolesBegin = "<!-- roles:begin (generated from policies/authz.rego: " +
		"go test ./policies -run TestRoleTableDoc -update) -->"
	rolesEnd = "<!-- roles:end -->"

	// Cells of the docs' table.
	cellAny   = "yes"
	cellOwn   = "their own"
	cellNone  = "no"
	cellNoKey = "none: people only"
)

// roleData is the role table and the scope table of a compiled policy set.
type roleData struct {
	Grants map[string]map[string]string `json:"grants"`
	Scopes map[string]string            `json:"scopes"`
}

// readRoleData compiles the non-test .rego files of fsys, as the engine
// loads them, and reads data.conclave.authz.role_grants and required_scope.
func readRoleData(t *testing.T, fsys fs.FS) roleData {
	t.Helper()
	opts := []func(*rego.Rego){
		rego.Query(`{"grants": data.conclave.authz.role_grants, "scopes": data.conclave.authz.required_scope}`),
		rego.SetRegoVersion(ast.RegoV1),
	}
	files, _ := regoFiles(t, fsys)
	require.NotEmpty(t, files)
	for _, name := range files {
		src, err := fs.ReadFile(fsys, name)
		require.NoError(t, err)
		opts = append(opts, rego.Module(name, string(src)))
	}
	rs, err := rego.New(opts...).Eval(context.Background())
	require.NoError(t, err)
	require.Len(t, rs, 1)
	v := rs[0].Expressions[0].Value.(map[string]any)
	d := roleData{Grants: map[string]map[string]string{}, Scopes: map[string]string{}}
	for action, roles := range v["grants"].(map[string]any) {
		d.Grants[action] = map[string]string{}
		for role, grant := range roles.(map[string]any) {
			d.Grants[action][role] = fmt.Sprint(grant)
		}
	}
	for action, scope := range v["scopes"].(map[string]any) {
		d.Scopes[action] = fmt.Sprint(scope)
	}
	return d
}

// roleTable renders a policy's role table as docs/people.md prints it: one
// row per action, the scope a key needs for it, one column per role.
func roleTable(t *testing.T, d roleData) string {
	t.Helper()
	actions := make([]string, 0, len(d.Grants))
	for a, roles := range d.Grants {
		actions = append(actions, a)
		for role, grant := range roles {
			require.Contains(t, core.Roles, core.Role(role), "role_grants[%q] names a role the docs have no column for", a)
			require.Contains(t, []string{"any", "own"}, grant, "role_grants[%q][%q] is neither \"any\" nor \"own\"", a, role)
		}
	}
	slices.Sort(actions)
	var b strings.Builder
	b.WriteString("| action | scope a key needs |")
	for _, r := range core.Roles {
		b.WriteString(" " + string(r) + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(core.Roles)) + "\n")
	for _, a := range actions {
		scope := cellNoKey
		if s, ok := d.Scopes[a]; ok {
			scope = "`" + s + "`"
		}
		b.WriteString("| `" + a + "` | " + scope + " |")
		for _, r := range core.Roles {
			cell := cellNone
			switch d.Grants[a][string(r)] {
			case "any":
				cell = cellAny
			case "own":
				cell = cellOwn
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// docRoleTable cuts the generated table out of docs/people.md, returning
// the document around it.
func docRoleTable(t *testing.T) (before, table, after string) {
	t.Helper()
	doc, err := os.ReadFile(peopleDoc)
	require.NoError(t, err)
	before, rest, ok := strings.Cut(string(doc), rolesBegin+"\n")
	require.True(t, ok, "docs/people.md has the roles:begin marker on a line of its own")
	table, after, ok = strings.Cut(rest, rolesEnd)
	require.True(t, ok, "docs/people.md has the roles:end marker")
	return before, table, after
}

// The role table of docs/people.md is the policy's, row for row.
func TestRoleTableDoc(t *testing.T) {
	t.Parallel()
	before, table, after := docRoleTable(t)
	want := roleTable(t, readRoleData(t, policies.FS))
	if *update {
		require.NoError(t, os.WriteFile(peopleDoc, []byte(before+rolesBegin+"\n"+want+rolesEnd+after), 0o644))
		return
	}
	require.Equal(t, want, table,
		"docs/people.md's role table is out of date: go test ./policies -run TestRoleTableDoc -update")
}

// TestDocRoleTableIsEnforced reads docs/people.md's table as a reader
// would and checks that the engine does what each cell says: for a person
// signed in, through a connected app and through a key they created, on
// their own object and on another's; and for a key of no person.
func TestDocRoleTableIsEnforced(t *testing.T) {
	t.Parallel()
	_, table, _ := docRoleTable(t)
	e := engine(t)
	org := &core.AuthzOrg{ID: "org_ours", Plan: core.PlanStandard}
	decide := func(in *core.AuthzInput) *core.Decision {
		t.Helper()
		d, err := e.Decide(t.Context(), in)
		require.NoError(t, err)
		return d
	}

	rows := 0
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 2+len(core.Roles) || !strings.HasPrefix(cells[0], "`") {
			continue // the header and its rule
		}
		rows++
		action := strings.Trim(cells[0], "`")
		scope := strings.Trim(cells[1], "`")

		// A key of no person: its scope alone decides.
		keyOfNoOne := &core.AuthzInput{Action: action, Org: org,
			Principal: core.PrincipalForKey(&core.Key{ID: "key_1", Scopes: core.AllScopes})}
		if cells[1] == cellNoKey {
			require.Equal(t, core.CodeInsufficientScope, decide(keyOfNoOne).Code, "%s by a key", action)
		} else {
			keyOfNoOne.Principal.Scopes = []string{scope}
			require.True(t, decide(keyOfNoOne).Allow, "%s by a key with %s", action, scope)
		}

		for i, role := range core.Roles {
			cell := cells[2+i]
			for _, kind := range []string{core.PrincipalSession, core.PrincipalOAuthApp, core.PrincipalAPIKey} {
				principal := core.PrincipalForPerson(kind)
				if kind == core.PrincipalAPIKey {
					principal = core.PrincipalForKey(&core.Key{ID: "key_2", Scopes: core.AllScopes, PersonID: "person_me"})
				}
				for _, owner := range []string{"person_me", "person_other"} {
					in := &core.AuthzInput{Action: action, Org: org, Principal: principal, Owner: owner,
						Person: &core.AuthzPerson{ID: "person_me", Role: role}}
					d := decide(in)
					what := fmt.Sprintf("%s by a %s (%s) on %s's object", action, role, kind, owner)
					switch {
					case kind == core.PrincipalAPIKey && cells[1] == cellNoKey:
						require.Equal(t, core.CodeInsufficientScope, d.Code, what)
					case cell == cellAny, cell == cellOwn && owner == "person_me":
						require.True(t, d.Allow, "%s: %s", what, d.Message)
					case cell == cellOwn, cell == cellNone:
						require.Equal(t, core.CodeForbidden, d.Code, what)
						require.Contains(t, d.Message, string(role), what)
						require.Contains(t, d.Message, action, what)
					default:
						t.Fatalf("docs/people.md: %s has the cell %q for %s", action, cell, role)
					}
				}
			}
		}
	}
	require.Equal(t, len(readRoleData(t, policies.FS).Grants), rows, "docs/people.md's table has a row per action")
}

const (
	tightenedDir = "testdata/tightened"
	// The one cell testdata/tightened changes: members may not launch test
	// runs.
	shippedRow   = `"tests.create": {"owner": "any", "member": "any"},`
	tightenedRow = `"tests.create": {"owner": "any"}, # tightened: members may not launch test runs`
)

// TestTightenedRoleTable is a policy author's workflow: testdata/tightened
// holds the shipped authz.rego with one cell of role_grants removed, as
// `conclave serve --policy-dir` would load it (a directory to serve also
// needs modespec.rego). The directory is the shipped policy but for that
// line (-update rewrites it); through the engine, members may then no
// longer launch test runs, by any route, and nothing else changes.
func TestTightenedRoleTable(t *testing.T) {
	t.Parallel()
	shipped, err := policies.FS.ReadFile("authz.rego")
	require.NoError(t, err)
	require.Contains(t, string(shipped), shippedRow)
	want := strings.Replace(string(shipped), shippedRow, tightenedRow, 1)
	path := filepath.Join(tightenedDir, "authz.rego")
	if *update {
		require.NoError(t, os.MkdirAll(tightenedDir, 0o755))
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(got),
		"%s is the shipped authz.rego but for one line: go test ./policies -run TestTightenedRoleTable -update", path)

	ctx := t.Context()
	tightened, err := policies.New(ctx, policies.Config{Dir: tightenedDir})
	require.NoError(t, err)
	org := &core.AuthzOrg{ID: "org_ours", Plan: core.PlanStandard}
	as := func(role core.Role, action string, principal *core.AuthzPrincipal) *core.AuthzInput {
		return &core.AuthzInput{Action: action, Org: org, Principal: principal,
			Person: &core.AuthzPerson{ID: "person_me", Role: role}}
	}
	session := core.PrincipalForPerson(core.PrincipalSession)
	membersKey := core.PrincipalForKey(&core.Key{ID: "key_m", Scopes: []string{core.ScopeTests}, PersonID: "person_me"})

	for _, tc := range []struct {
		name      string
		in        *core.AuthzInput
		shipped   bool // allowed by the embedded policy
		tightened bool // allowed by testdata/tightened
	}{
		{"member launches a test run", as(core.RoleMember, core.ActionTestsCreate, session), true, false},
		{"member's key launches a test run", as(core.RoleMember, core.ActionTestsCreate, membersKey), true, false},
		{"member reads test runs", as(core.RoleMember, core.ActionTestsRead, session), true, true},
		{"owner launches a test run", as(core.RoleOwner, core.ActionTestsCreate, session), true, true},
		{"key of no one launches a test run", &core.AuthzInput{Action: core.ActionTestsCreate, Org: org,
			Principal: core.PrincipalForKey(&core.Key{ID: "key_1", Scopes: []string{core.ScopeTests}})}, true, true},
	} {
		for _, run := range []struct {
			e     *policies.Engine
			allow bool
		}{{engine(t), tc.shipped}, {tightened, tc.tightened}} {
			d, err := run.e.Decide(ctx, tc.in)
			require.NoError(t, err)
			require.Equal(t, run.allow, d.Allow, "%s: %s", tc.name, d.Message)
		}
	}

	d, err := tightened.Decide(ctx, as(core.RoleMember, core.ActionTestsCreate, session))
	require.NoError(t, err)
	require.Equal(t, core.CodeForbidden, d.Code)
	require.Equal(t, "A member of this organisation cannot do tests.create.", d.Message)

	// The docs' table, generated from the tightened set, says so too.
	require.Contains(t, roleTable(t, readRoleData(t, os.DirFS(tightenedDir))), "| `tests.create` | `tests` | yes | no |\n")
}
