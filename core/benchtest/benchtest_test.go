package benchtest

import (
	"cmp"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A result line counts, a sub-benchmark's too; a name that only begins
// another's, or a failure, does not.
func TestReported(t *testing.T) {
	t.Parallel()
	for out, want := range map[string]bool{
		"BenchmarkCall-2   \t       1\t     41000 ns/op\nPASS\n":             true,
		"BenchmarkCall/memo=off-2  \t 1\t 328788 ns/op\nPASS\n":              true,
		"BenchmarkCall \t 1 \t 5 ns/op\n":                                    true,
		"BenchmarkCallOverhead-2 \t 1 \t 5 ns/op\nPASS\n":                    false,
		"--- FAIL: BenchmarkCall\n    x_test.go:1: boom\nFAIL\n":             false,
		"PASS\nok  \tgithub.com/conclavehq/conclave/plugins/egress\t0.01s\n": false,
	} {
		if got := reported(out, "BenchmarkCall"); got != want {
			t.Errorf("reported(%q) = %v, want %v", out, got, want)
		}
	}
}

// A skip of the benchmark itself is seen (Smoke fails it under CI=true);
// another's, or a skip message that only names it, is not.
func TestSkipped(t *testing.T) {
	t.Parallel()
	require.True(t, skipped("--- SKIP: BenchmarkCall\n    x_test.go:1: no chromium\nPASS\n", "BenchmarkCall"))
	require.False(t, skipped("BenchmarkCall-2 \t 1 \t 5 ns/op\nPASS\n", "BenchmarkCall"))
	require.False(t, skipped("--- SKIP: BenchmarkOther\nPASS\n", "BenchmarkCall"))
}

// Every benchmark of the module has its smoke form in the same package:
// TestXSmoke beside BenchmarkX (a few older twins go by other names), so
// that make test runs it. A new benchmark without one fails here.
func TestEveryBenchmarkHasASmokeTest(t *testing.T) {
	t.Parallel()
	twins := map[string]string{ // benchmark → its smoke test, where the names differ
		"internal/pgstore.BenchmarkListModes": "TestBenchListModesSmoke",
	}
	notBenchmarks := map[string]bool{ // tools written as benchmarks, behind a build tag
		"adapters/sim.BenchmarkFitSeedProfile": true, // simfit: refits the seed profile
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	benchRe, smokeRe := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(`), regexp.MustCompile(`(?m)^func (Test\w+Smoke)\(`)
	benches, smokes := map[string][]string{}, map[string]map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range benchRe.FindAllStringSubmatch(string(src), -1) {
			benches[pkg] = append(benches[pkg], m[1])
		}
		for _, m := range smokeRe.FindAllStringSubmatch(string(src), -1) {
			if smokes[pkg] == nil {
				smokes[pkg] = map[string]bool{}
			}
			smokes[pkg][m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, benches)
	for pkg, names := range benches {
		for _, b := range names {
			id := filepath.ToSlash(pkg) + "." + b
			if notBenchmarks[id] {
				continue
			}
			want := cmp.Or(twins[id], "Test"+strings.TrimPrefix(b, "Benchmark")+"Smoke")
			require.True(t, smokes[pkg][want], "%s has no smoke test %s (see core/benchtest)", id, want)
		}
	}
}
