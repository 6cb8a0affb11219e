package nodetest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/nodetest"
)

// The runner finds compat/, runs a Node program there with the given
// environment and reports its exit code; a failing node:test file is
// reported as such.
func TestCommandRunsNodeInCompat(t *testing.T) {
	node := nodetest.Require(t)
	res := nodetest.Command(t, time.Minute, map[string]string{"NODETEST_PROBE": "42"}, node,
		"-e", `const v = require('./package.json').name; console.log(v + ' ' + process.env.NODETEST_PROBE); process.exit(3)`)
	if got := strings.TrimSpace(string(res.Stdout)); got != "conclave-compat 42" {
		t.Fatalf("stdout = %q, want the package name and the probe", got)
	}
	if res.ExitCode != 3 {
		t.Fatalf("exit code = %d, want 3", res.ExitCode)
	}
	if _, err := os.Stat(filepath.Join(nodetest.Dir(t), "package-lock.json")); err != nil {
		t.Fatalf("compat/ has no lockfile: %v", err)
	}
}
