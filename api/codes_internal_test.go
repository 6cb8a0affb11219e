package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// TestEveryCodeHasOneTableRow reads every Code constant core declares and
// checks the table maps it, so a new code cannot ship without a status.
func TestEveryCodeHasOneTableRow(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "../core/codes.go", nil, 0)
	require.NoError(t, err)
	var codes []core.Code
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				lit := v.(*ast.BasicLit)
				s, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				codes = append(codes, core.Code(s))
			}
		}
	}
	require.Greater(t, len(codes), 60, "parsed the code list")
	seen := map[core.Code]bool{}
	for _, c := range codes {
		require.False(t, seen[c], "code %q declared twice", c)
		seen[c] = true
		info, ok := codeTable[c]
		require.True(t, ok, "code %q has no row in codeTable", c)
		require.NotZero(t, info.Status)
		require.Contains(t, []string{typeInvalidRequest, typeAuthentication, typePermission, typeRateLimit, typeAPI}, info.Type)
		require.Contains(t, []string{retryNo, retryYes, retryWait, retryMaybe}, info.Retry)
	}
	require.Len(t, codeTable, len(codes), "the table has rows for codes core does not declare")

	// The two types the spec states outright.
	require.Equal(t, typeRateLimit, codeTable[core.CodeRateLimitExceeded].Type)
	require.Equal(t, typeInvalidRequest, codeTable[core.CodeModelNotFound].Type)
}
