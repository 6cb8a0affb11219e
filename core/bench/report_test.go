package bench_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench"
)

var update = flag.Bool("update", false, "rewrite testdata/report.golden.json from Score's report of the hand-worked run")

// TestReportGolden pins the report's JSON — the stored result of a batch —
// field by field. Numbers are rounded to nine significant digits first, so
// that the last bits of floating point (fused multiply-add on some
// processors) do not matter. Regenerate with -update.
func TestReportGolden(t *testing.T) {
	t.Parallel()
	run := handRun()
	// One question loses every judgment so that undefined figures show as
	// null; one bucket keeps one question.
	for i := range run.Judgments {
		if run.Judgments[i].Question == 5 {
			run.Judgments[i].Outcome = bench.Missing
		}
	}
	r, err := bench.Score(run, bench.Config{})
	require.NoError(t, err)
	got, err := json.Marshal(r)
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(got, &doc))
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(roundNumbers(doc)))
	got = out.Bytes()

	path := filepath.Join("testdata", "report.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func roundNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = roundNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = roundNumbers(e)
		}
	case float64:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 9, 64), 64)
		return f
	}
	return v
}

// TestReportRoundTrip checks that a stored report reads back as it was,
// undefined figures included, and that a run round-trips too.
func TestReportRoundTrip(t *testing.T) {
	t.Parallel()
	run := handRun()
	run.Judgments = run.Judgments[:4] // one question: most figures undefined
	r, err := bench.Score(run, bench.Config{})
	require.NoError(t, err)
	require.False(t, r.SE.Defined())
	first, err := json.Marshal(r)
	require.NoError(t, err)
	require.Contains(t, string(first), `"se":null`)

	var back bench.Report
	require.NoError(t, json.Unmarshal(first, &back))
	require.True(t, math.IsNaN(float64(back.SE)))
	second, err := json.Marshal(&back)
	require.NoError(t, err)
	require.True(t, bytes.Equal(first, second), "%s\n%s", first, second)

	b, err := json.Marshal(handRun())
	require.NoError(t, err)
	var runBack bench.Run
	require.NoError(t, json.Unmarshal(b, &runBack))
	require.Equal(t, *handRun(), runBack)
}
