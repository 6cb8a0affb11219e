package modes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// askedPolicy answers one marker refusal, so that a test sees whether a
// spec reached the policy.
type askedPolicy struct{}

var asked = modes.Refusal{Code: core.CodeNameReserved, Message: "the policy was asked", Path: "name"}

func (askedPolicy) Refusals(context.Context, *modes.Input) ([]modes.Refusal, error) {
	return []modes.Refusal{asked}, nil
}

// boundsSpec is a small spec changed by edit, as JSON.
func boundsSpec(t *testing.T, edit func(s map[string]any)) []byte {
	t.Helper()
	s := map[string]any{"name": "Acme Draw", "ticker": "DRAW", "critique": "deep", "max_rounds": 1}
	edit(s)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return b
}

func seatRow(n int, engine string) []any {
	row := make([]any, n)
	for i := range row {
		row[i] = map[string]any{"engine": engine}
	}
	return row
}

// fieldsTo adds unknown fields until the spec holds n fields in all its
// objects (the seats of boundsSpec's edits hold one each).
func fieldsTo(s map[string]any, n int) {
	have := countFields(s)
	for i := 0; have < n; i++ {
		s[fmt.Sprintf("extra_%d", i)] = true
		have++
	}
}

func countFields(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += 1 + countFields(x)
		}
	case []any:
		for _, x := range v {
			n += countFields(x)
		}
	}
	return n
}

// TestBoundsAnswerBeforeThePolicy: a row longer than a call convenes, a
// pool longer than the catalogue and a spec of more fields than any spec
// needs are refused in Go, with their codes and paths, and the policy is
// never asked (its cost would grow with them); a spec at every bound
// reaches the policy.
func TestBoundsAnswerBeforeThePolicy(t *testing.T) {
	t.Parallel()
	pool := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "x/big"
		}
		return out
	}
	cases := []struct {
		name string
		edit func(s map[string]any)
		want []modes.Refusal // nil: the policy is asked
	}{
		{"a seats row of a thousand seats", func(s map[string]any) { s["seats"] = seatRow(1000, "x/big") },
			[]modes.Refusal{{Code: core.CodeSixSeatsRequired, Path: "seats"}}},
		{"one row by tier too long", func(s map[string]any) {
			s["seats_by_tier"] = map[string]any{"plus": seatRow(modes.MaxSeats+1, "auto"), "pro": seatRow(modes.MaxSeats, "x/big")}
		}, []modes.Refusal{{Code: core.CodeSixSeatsRequired, Path: "seats_by_tier.plus"}}},
		{"rows of an unknown tier count too", func(s map[string]any) {
			s["seats_by_tier"] = map[string]any{"gold": seatRow(40, "y/big"), "plus": seatRow(300, "x/big")}
		}, []modes.Refusal{
			{Code: core.CodeSixSeatsRequired, Path: "seats_by_tier.gold"},
			{Code: core.CodeSixSeatsRequired, Path: "seats_by_tier.plus"},
		}},
		{"a pool longer than the catalogue", func(s map[string]any) {
			s["seats"] = seatRow(2, "auto")
			s["pool"] = pool(len(engines()) + 1)
		}, []modes.Refusal{{Code: core.CodeInvalidValue, Path: "pool"}}},
		{"a row and a pool too long at once", func(s map[string]any) {
			s["seats"] = seatRow(7, "auto")
			s["pool"] = pool(500)
		}, []modes.Refusal{{Code: core.CodeInvalidValue, Path: "pool"}, {Code: core.CodeSixSeatsRequired, Path: "seats"}}},
		{"more fields than a spec holds", func(s map[string]any) { fieldsTo(s, modes.MaxSpecFields+1) },
			[]modes.Refusal{{Code: core.CodeInvalidValue, Path: ""}}},
		{"fields nested in staff count too", func(s map[string]any) {
			staff := map[string]any{}
			for i := range modes.MaxSpecFields / 2 {
				staff[fmt.Sprintf("role_%d", i)] = map[string]any{"engine": "x/big"}
			}
			s["staff"] = staff
		}, []modes.Refusal{{Code: core.CodeInvalidValue, Path: ""}}},

		{"rows of the most seats", func(s map[string]any) {
			s["seats_by_tier"] = map[string]any{"plus": seatRow(modes.MaxSeats, "x/big"), "pro": seatRow(modes.MaxSeats, "y/big")}
		}, nil},
		{"a pool as long as the catalogue", func(s map[string]any) {
			s["seats"] = seatRow(2, "auto")
			s["pool"] = pool(len(engines()))
		}, nil},
		{"the most fields", func(s map[string]any) { fieldsTo(s, modes.MaxSpecFields) }, nil},
		{"rows and pool of the wrong type are the policy's", func(s map[string]any) {
			s["seats"] = "x/big"
			s["seats_by_tier"] = []any{seatRow(9, "x/big")}
			s["pool"] = map[string]any{"x/big": true}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := boundsSpec(t, tc.edit)
			require.LessOrEqual(t, len(spec), modes.MaxSpecBytes, "the case is within the size cap")
			rs, m, err := modes.Validate(context.Background(), askedPolicy{}, modes.Request{Spec: spec, Engines: engines()})
			require.NoError(t, err)
			require.Nil(t, m)
			if tc.want == nil {
				require.Equal(t, []modes.Refusal{asked}, rs)
				return
			}
			require.Len(t, rs, len(tc.want), "refusals: %+v", rs)
			for i, r := range rs {
				require.Equal(t, tc.want[i].Code, r.Code, "refusal %d: %+v", i, r)
				require.Equal(t, tc.want[i].Path, r.Path, "refusal %d: %+v", i, r)
				require.NotEmpty(t, r.Message)
			}
		})
	}
}

// TestSpecSizeCap: a spec over MaxSpecBytes is refused outright, 413
// request_too_large naming spec, like any body over its cap; one of exactly
// MaxSpecBytes is validated.
func TestSpecSizeCap(t *testing.T) {
	t.Parallel()
	padded := func(n int) []byte {
		b := boundsSpec(t, func(s map[string]any) { s["description"] = "" })
		pad := strings.Repeat("a", n-len(b))
		return boundsSpec(t, func(s map[string]any) { s["description"] = pad })
	}
	at := padded(modes.MaxSpecBytes)
	require.Len(t, at, modes.MaxSpecBytes)
	rs, _, err := modes.Validate(context.Background(), askedPolicy{}, modes.Request{Spec: at, Engines: engines()})
	require.NoError(t, err)
	require.Equal(t, []modes.Refusal{asked}, rs)

	over := padded(modes.MaxSpecBytes + 1)
	rs, m, err := modes.Validate(context.Background(), askedPolicy{}, modes.Request{Spec: over, Engines: engines()})
	require.Nil(t, rs)
	require.Nil(t, m)
	e := core.AsError(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, core.CodeRequestTooLarge, e.Code)
	require.Equal(t, "spec", e.Param)
	require.Equal(t, 413, core.InfoFor(e.Code).Status)
	require.Contains(t, e.Message, "65536")
}

// FuzzBounds: the bounds read caller input before anything else does; any
// bytes give refusals or an error, never a panic, and nothing past the
// bounds reaches the policy.
func FuzzBounds(f *testing.F) {
	f.Add([]byte(`{"seats": [{"engine": "auto"}], "pool": ["x/big"], "seats_by_tier": {"plus": []}}`))
	f.Add([]byte(`{"seats_by_tier": {"plus": [1, 2, 3, 4, 5, 6, 7]}, "staff": {"judge": {"engine": {"a": {}}}}}`))
	f.Add([]byte(`{"a": [[[{"b": {"c": 1}}]]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var seen *modes.Input
		p := policyFunc(func(in *modes.Input) { seen = in })
		_, _, err := modes.Validate(context.Background(), p, modes.Request{Spec: b, Engines: engines()})
		if err != nil {
			require.Equal(t, core.CodeRequestTooLarge, core.AsError(err).Code)
			return
		}
		if seen == nil {
			return
		}
		spec := seen.Spec.(map[string]any)
		require.LessOrEqual(t, countFields(spec), modes.MaxSpecFields)
		if row, ok := spec["seats"].([]any); ok {
			require.LessOrEqual(t, len(row), modes.MaxSeats)
		}
		if pool, ok := spec["pool"].([]any); ok {
			require.LessOrEqual(t, len(pool), len(engines()))
		}
	})
}

type policyFunc func(in *modes.Input)

func (f policyFunc) Refusals(_ context.Context, in *modes.Input) ([]modes.Refusal, error) {
	f(in)
	return nil, nil
}
