// Package benchtest runs a package's benchmarks in a smoke form under
// `go test`, so that a change that breaks one fails `make test` rather than
// the next `make bench`.
//
// A smoke test (TestXSmoke, beside BenchmarkX) calls Smoke with the
// benchmark's name: the test binary runs again as a child process, that
// benchmark alone, once (-test.benchtime=1x), with CONCLAVE_BENCH_SMOKE=1
// in its environment. A benchmark whose one run is long (load sweeps,
// thousands of deliberations) asks Smoking and shrinks its sizes to a
// second's window and a handful of calls. Nothing is asserted about the
// figures: the benchmark must start, run and report. It sits under core,
// beside the other test helpers core's own packages use, because core may
// import nothing from internal.
package benchtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Env is the variable a smoke run's child process carries.
const Env = "CONCLAVE_BENCH_SMOKE"

// Smoking reports whether this process runs a benchmark in its smoke form:
// benchmarks with long runs shrink their sizes when it is true.
func Smoking() bool { return os.Getenv(Env) == "1" }

// Timeout bounds one smoke run.
const Timeout = 5 * time.Minute

// Smoke runs the benchmark called name (BenchmarkX) of the calling test
// binary alone, once, in its smoke form, and fails t with the child's
// output if the benchmark fails or reports nothing. A benchmark that skips
// (a missing dependency) skips t on a developer's machine and fails it
// under CI=true, where every benchmark must run.
func Smoke(t *testing.T, name string) {
	t.Helper()
	if !strings.HasPrefix(name, "Benchmark") {
		t.Fatalf("benchtest.Smoke: %q is not a benchmark's name", name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0],
		"-test.run=^$", "-test.bench=^"+regexp.QuoteMeta(name)+"$", "-test.benchtime=1x",
		"-test.benchmem", "-test.count=1", "-test.timeout="+Timeout.String())
	cmd.Env = append(os.Environ(), Env+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	text := out.String()
	switch {
	case err != nil:
		t.Fatalf("%s (smoke form) failed after %s: %v\n%s", name, time.Since(start).Round(time.Millisecond), err, text)
	case skipped(text, name) && os.Getenv("CI") == "true":
		t.Fatalf("%s (smoke form) skipped, and CI runs every benchmark:\n%s", name, text)
	case skipped(text, name):
		t.Skipf("%s skipped:\n%s", name, text)
	case !reported(text, name):
		t.Fatalf("%s (smoke form) reported no figure:\n%s", name, text)
	}
	t.Logf("%s (smoke form) ran in %s", name, time.Since(start).Round(time.Millisecond))
}

// reported reports whether out holds a result line of the benchmark name
// (or of one of its sub-benchmarks): its name, then a count of runs.
func reported(out, name string) bool {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(/\S*)?(-\d+)?\s+\d+\s`)
	return re.MatchString(out)
}

// skipped reports whether the output of a smoke run says the benchmark
// name skipped.
func skipped(text, name string) bool { return strings.Contains(text, "--- SKIP: "+name) }
