package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// A suffix is "lab" or "v" and a version number written plainly; anything
// else after "@" is not a suffix.
func TestSplitModeSuffix(t *testing.T) {
	t.Parallel()
	type split struct {
		ref, suffix string
		version     int
		ok          bool
	}
	for id, want := range map[string]split{
		"acme-panl":                         {"acme-panl", "", 0, true},
		"ACME:PANL":                         {"ACME:PANL", "", 0, true},
		"acme-panl@lab":                     {"acme-panl", "lab", 0, true},
		"ACME:PANL@v2":                      {"ACME:PANL", "v2", 2, true},
		"acme-panl@v10":                     {"acme-panl", "v10", 10, true},
		"acme-panl@":                        {"acme-panl", "", 0, false},
		"acme-panl@LAB":                     {"acme-panl", "LAB", 0, false},
		"acme-panl@V2":                      {"acme-panl", "V2", 0, false},
		"acme-panl@v0":                      {"acme-panl", "v0", 0, false},
		"acme-panl@v02":                     {"acme-panl", "v02", 0, false},
		"acme-panl@v+2":                     {"acme-panl", "v+2", 0, false},
		"acme-panl@v-1":                     {"acme-panl", "v-1", 0, false},
		"acme-panl@v":                       {"acme-panl", "v", 0, false},
		"acme-panl@2":                       {"acme-panl", "2", 0, false},
		"acme-panl@beta":                    {"acme-panl", "beta", 0, false},
		"acme-panl@lab@lab":                 {"acme-panl", "lab@lab", 0, false},
		"acme-panl@v2 ":                     {"acme-panl", "v2 ", 0, false},
		"acme-panl@v9999999999999999999999": {"acme-panl", "v9999999999999999999999", 0, false},
	} {
		ref, suffix, version, ok := core.SplitModeSuffix(id)
		require.Equal(t, want, split{ref, suffix, version, ok}, id)
	}
}
