package pgstore

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed queries.sql
var queriesSQL string

// queries maps each "-- name:" block of queries.sql to its SQL.
var queries = parseQueries(queriesSQL)

func parseQueries(src string) map[string]string {
	out := map[string]string{}
	var name string
	var b strings.Builder
	flush := func() {
		if name != "" {
			out[name] = strings.TrimSpace(b.String())
		}
		b.Reset()
	}
	for _, line := range strings.Split(src, "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			flush()
			name = strings.TrimSpace(n)
			if _, dup := out[name]; dup {
				panic(fmt.Sprintf("queries.sql: query %q defined twice", name))
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	flush()
	return out
}

// q returns the named query; a missing name is a programming error.
func q(name string) string {
	s, ok := queries[name]
	if !ok {
		panic(fmt.Sprintf("queries.sql has no query %q", name))
	}
	return s
}
