package api

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

var update = flag.Bool("update", false, "rewrite generated documentation")

const (
	docPath    = "../docs/errors.md"
	beginTable = "<!-- codes:begin (generated from api/errors.go by `go test ./api -run TestErrorsDoc -update`) -->"
	endTable   = "<!-- codes:end -->"
)

// TestErrorsDocMatchesTheCodeTable keeps docs/errors.md's table identical to
// codeTable.
func codeOf(s string) core.Code { return core.Code(s) }

func TestErrorsDocMatchesTheCodeTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| code | HTTP | type | retry |\n|---|---|---|---|\n")
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
		fmt.Fprintf(&b, "| `%s` | %d | `%s` | %s |\n", c, info.Status, info.Type, info.Retry)
	}
	want := b.String()

	doc, err := os.ReadFile(docPath)
	require.NoError(t, err)
	s := string(doc)
	i, j := strings.Index(s, beginTable), strings.Index(s, endTable)
	require.True(t, i >= 0 && j > i, "docs/errors.md lacks the generated-table markers")
	got := s[i+len(beginTable)+1 : j]
	if *update {
		s = s[:i+len(beginTable)+1] + want + s[j:]
		require.NoError(t, os.WriteFile(docPath, []byte(s), 0o644))
		return
	}
	require.Equal(t, want, got, "docs/errors.md is out of date: run go test ./api -run TestErrorsDoc -update")
}
