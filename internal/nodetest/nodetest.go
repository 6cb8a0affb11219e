// Package nodetest runs the Node.js compatibility programs of compat/ — the
// official OpenAI and MCP client libraries, installed there by `make compat`
// with npm ci — from Go tests, against servers the Go test started.
//
// Without Node.js or the installed packages a test is skipped on a
// developer's machine and fails under CI=true, where the compatibility tests
// must run.
package nodetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Dir is the absolute path of compat/.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("nodetest: cannot locate the source tree")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "compat")
}

// Require skips (or, under CI=true, fails) the test when Node.js or the
// packages of compat/ are missing, and returns the node binary.
func Require(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "Node.js (node) is not on PATH"
	default:
		if _, err := os.Stat(filepath.Join(Dir(t), "node_modules", ".package-lock.json")); err != nil {
			missing = "compat/node_modules is not installed (run make compat)"
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nodetest: %s; CI runs the Node client compatibility tests", missing)
		}
		t.Skipf("nodetest: %s", missing)
	}
	return node
}

// Bin is the path of an executable the packages of compat/ install
// (compat/node_modules/.bin/name).
func Bin(t testing.TB, name string) string {
	t.Helper()
	Require(t)
	p := filepath.Join(Dir(t), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("nodetest: %s is not installed in compat/: %v", name, err)
	}
	return p
}

// Result is what a finished Node program printed and how it exited.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Command runs name with args in compat/, with env added to a scratch HOME
// and the update notifier off, and returns its output and exit code. It
// fails the test only when the program cannot be started or outlives
// timeout; the exit code is the caller's to judge.
func Command(t testing.TB, timeout time.Duration, env map[string]string, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = Dir(t)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NPM_CONFIG_UPDATE_NOTIFIER=false", "NO_COLOR=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("nodetest: %s did not finish within %s\nstdout:\n%s\nstderr:\n%s", name, timeout, stdout.Bytes(), stderr.Bytes())
	}
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if exit, ok := err.(*exec.ExitError); ok {
		res.ExitCode = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("nodetest: starting %s: %v", name, err)
	}
	return res
}

// Test runs the node:test file script (relative to compat/) with env and
// fails the test unless every Node test in it passed; Node's report is
// logged either way.
func Test(t testing.TB, timeout time.Duration, env map[string]string, script string) {
	t.Helper()
	node := Require(t)
	res := Command(t, timeout, env, node, "--test", "--test-reporter=spec", script)
	t.Logf("node --test %s:\n%s%s", script, res.Stdout, res.Stderr)
	if res.ExitCode != 0 {
		t.Fatalf("node --test %s exited %d", script, res.ExitCode)
	}
}
