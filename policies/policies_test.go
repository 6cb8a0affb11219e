package policies_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/policies"
)

// policyFS is the set under test: the embedded policies, or the directory
// named by CONCLAVE_POLICY_DIR, so that a policy author can test a set meant
// for `conclave serve --policy-dir` without the OPA command line:
//
//	CONCLAVE_POLICY_DIR=/path/to/policies go test ./policies/...
func policyFS(t *testing.T) fs.FS {
	t.Helper()
	if dir := os.Getenv("CONCLAVE_POLICY_DIR"); dir != "" {
		t.Logf("testing the policies in %s", dir)
		return os.DirFS(dir)
	}
	return policies.FS
}

// regoFiles returns the paths of the .rego files of fsys, split into
// policies and tests.
func regoFiles(t *testing.T, fsys fs.FS) (policyFiles, testFiles []string) {
	t.Helper()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != "." && strings.HasPrefix(d.Name(), "."):
			return fs.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".rego"):
			return nil
		case strings.HasSuffix(p, "_test.rego"):
			testFiles = append(testFiles, p)
		default:
			policyFiles = append(policyFiles, p)
		}
		return nil
	})
	require.NoError(t, err)
	return policyFiles, testFiles
}

// TestRego runs every Rego test (test_* rules) in the embedded files through
// OPA's tester, the way `opa test policies/` would.
func TestRego(t *testing.T) {
	t.Parallel()
	fsys := policyFS(t)
	policyFiles, testFiles := regoFiles(t, fsys)
	require.NotEmpty(t, policyFiles)
	require.NotEmpty(t, testFiles)

	modules := map[string]*ast.Module{}
	for _, name := range append(policyFiles, testFiles...) {
		src, err := fs.ReadFile(fsys, name)
		require.NoError(t, err)
		m, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
		require.NoError(t, err)
		modules[name] = m
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results, err := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetModules(modules).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true).
		RunTests(ctx, nil)
	require.NoError(t, err)

	ran := 0
	for r := range results {
		ran++
		name := r.Package + "." + r.Name
		switch {
		case r.Error != nil:
			t.Errorf("%s (%s): error: %v", name, r.Location, r.Error)
		case r.Fail:
			msg := fmt.Sprintf("%s (%s): FAIL", name, r.Location)
			if r.FailedAt != nil {
				msg += fmt.Sprintf(" at %s: %s", r.FailedAt.Location, r.FailedAt)
			}
			if len(r.Output) > 0 {
				msg += "\n" + string(r.Output)
			}
			t.Error(msg)
		case r.Skip:
			t.Errorf("%s (%s): skipped (a todo_ test proves nothing): make it a test or remove it", name, r.Location)
		}
	}
	require.Positive(t, ran, "no Rego tests ran")
	t.Logf("%d Rego tests ran", ran)
}

// TestEveryPolicyHasTests checks that each policy file x.rego has an
// x_test.rego beside it.
func TestEveryPolicyHasTests(t *testing.T) {
	t.Parallel()
	policyFiles, testFiles := regoFiles(t, policyFS(t))
	tests := map[string]bool{}
	for _, name := range testFiles {
		tests[name] = true
	}
	for _, name := range policyFiles {
		want := strings.TrimSuffix(name, ".rego") + "_test.rego"
		require.True(t, tests[want], "policy %s has no %s", name, want)
	}
}
