package deptest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCovers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, pkg string
		want         bool
	}{
		{"api", "api", true},
		{"api", "api/render", true},
		{"api", "apix", false},
		{".", "core/deliberate", true},
		{"adapters/example/*/*", "adapters/example/ollama/wasm", true},
		{"adapters/example/*/*", "adapters/example/ollama", false},
		{"adapters/example/*/*", "adapters/openai", false},
	} {
		require.Equal(t, c.want, covers(c.pattern, c.pkg), "%s covers %s", c.pattern, c.pkg)
	}
}

func TestForbids(t *testing.T) {
	t.Parallel()
	r := Rule{Only: []string{"core"}, Forbidden: Storage}
	require.Empty(t, r.forbids(Module+"/core/deliberate"), "inside Only")
	require.Empty(t, r.forbids("github.com/go-chi/chi/v5"), "third-party, not forbidden")
	require.NotEmpty(t, r.forbids(Module+"/internal/pgstore"), "outside Only")
	require.NotEmpty(t, r.forbids(Module+"/corex"), "a sibling of core is not core")
	require.NotEmpty(t, r.forbids("github.com/jackc/pgx/v5/pgconn"), "below a forbidden path")
	require.Empty(t, Rule{}.forbids(Module+"/cmd/conclave"), "no rule, no limit")
}

// recorder keeps what Check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	check := func(r Rule) []string {
		rec := &recorder{TB: t}
		Check(rec, r)
		return rec.errs
	}
	require.Equal(t, []string{"deptest: no package matches no-such-folder"}, check(Rule{Packages: "no-such-folder"}),
		"a rule that covers nothing fails")
	require.Empty(t, check(Rule{Packages: "no-such-folder", Planned: true}), "unless it is planned")
	require.Empty(t, check(Rule{Packages: "internal/deptest", Only: []string{"core"}}), "deptest needs only the standard library")
	require.Contains(t, check(Rule{Packages: "internal/jobs", Only: []string{"core"}}),
		"internal/jobs depends on "+Module+"/internal/pgstore, which is outside core")
}
