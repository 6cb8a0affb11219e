package core

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryCodeHasOneTableRow reads every Code constant core declares and
// checks the table maps it, so a new code cannot ship without a status.
func TestEveryCodeHasOneTableRow(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	require.NoError(t, err)
	var codes []Code
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
				codes = append(codes, Code(s))
			}
		}
	}
	require.Greater(t, len(codes), 60, "parsed the code list")
	seen := map[Code]bool{}
	for _, c := range codes {
		require.False(t, seen[c], "code %q declared twice", c)
		seen[c] = true
		info, ok := codeTable[c]
		require.True(t, ok, "code %q has no row in codeTable", c)
		require.NotZero(t, info.Status)
		require.Contains(t, []ErrorType{TypeInvalidRequest, TypeAuthentication, TypePermission, TypeRateLimit, TypeAPI}, info.Type)
		require.Contains(t, []Retry{RetryNo, RetryYes, RetryWait, RetryMaybe}, info.Retry)
	}
	require.Len(t, codeTable, len(codes), "the table has rows for codes core does not declare")

	// The two types the spec states outright.
	require.Equal(t, TypeRateLimit, codeTable[CodeRateLimitExceeded].Type)
	require.Equal(t, TypeInvalidRequest, codeTable[CodeModelNotFound].Type)
}

var update = flag.Bool("update", false, "rewrite generated documentation")

const (
	docPath    = "../docs/api.md"
	beginTable = "<!-- codes:begin (generated from core/codetable.go by `go test ./core -run TestErrorsDoc -update`) -->"
	endTable   = "<!-- codes:end -->"
)

// TestErrorsDocMatchesTheCodeTable keeps the code table of docs/api.md
// identical to codeTable and clientAdvice.
func codeOf(s string) Code { return Code(s) }

// Every code has a line of advice for clients, and every line of advice a
// code.
func TestEveryCodeHasClientAdvice(t *testing.T) {
	for c := range codeTable {
		require.NotEmpty(t, Advice(c), "code %s has no advice in clientAdvice", c)
	}
	for c := range clientAdvice {
		require.True(t, KnownCode(c), "advice for %s, which the code table lacks", c)
	}
}

func TestErrorsDocMatchesTheCodeTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| code | HTTP | type | retry | what a client should do |\n|---|---|---|---|---|\n")
	codes := make([]string, 0, len(codeTable))
	for c := range codeTable {
		codes = append(codes, string(c))
	}
	sort.Slice(codes, func(i, j int) bool {
		si, sj := codeTable[codeOf(codes[i])].Status, codeTable[codeOf(codes[j])].Status
		if si != sj {
			return si < sj
		}
		return codes[i] < codes[j]
	})
	for _, c := range codes {
		info := codeTable[codeOf(c)]
		fmt.Fprintf(&b, "| `%s` | %d | `%s` | %s | %s |\n", c, info.Status, info.Type, info.Retry, Advice(codeOf(c)))
	}
	want := b.String()

	doc, err := os.ReadFile(docPath)
	require.NoError(t, err)
	s := string(doc)
	i, j := strings.Index(s, beginTable), strings.Index(s, endTable)
	require.True(t, i >= 0 && j > i, "docs/api.md lacks the generated-table markers")
	got := s[i+len(beginTable)+1 : j]
	if *update {
		s = s[:i+len(beginTable)+1] + want + s[j:]
		require.NoError(t, os.WriteFile(docPath, []byte(s), 0o644))
		return
	}
	require.Equal(t, want, got, "docs/api.md is out of date: run go test ./core -run TestErrorsDoc -update")
}
