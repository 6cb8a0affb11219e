// Command testpg runs a command — normally `go test` — against one shared,
// throwaway PostgreSQL cluster:
//
//	go run ./internal/pgtest/testpg -- go test -count=1 ./...
//
// When TEST_DATABASE_URL is already set, testpg just runs the command with
// it. Otherwise it starts a Fast local cluster (package localpg) in a
// temporary directory, runs the command with TEST_DATABASE_URL pointing at
// the cluster's `postgres` database, then stops and removes the cluster —
// also on SIGINT/SIGTERM — and exits with the command's exit code. Every test
// package then shares the cluster and the migrated template database (see
// package pgtest).
//
// A pristine initdb output is cached under
// $XDG_CACHE_HOME/conclave/pg-initdb-<version> (localpg.DefaultInitCache)
// and copied instead of running initdb again.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/conclavehq/conclave/internal/localpg"
)

// envURL is envURL (not imported: pgtest pulls package testing in).
const envURL = "TEST_DATABASE_URL"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: testpg [--] command [args...]   (e.g. testpg -- go test ./...)")
		return 2
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		return 127
	}
	if os.Getenv(envURL) != "" {
		err := syscall.Exec(path, args, os.Environ())
		fmt.Fprintf(os.Stderr, "testpg: exec %s: %v\n", args[0], err)
		return 126
	}

	// From here on signals are ours to handle: the cluster must be removed.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cluster, err := localpg.StartTemp(ctx, localpg.Config{Logger: logger})
	interrupted := ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testpg: cannot start PostgreSQL: %v\n", err)
		if interrupted {
			return 130
		}
		return 1
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		}
	}()

	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Env = append(os.Environ(), envURL+"="+cluster.URLFor("postgres"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		return 126
	}
	go func() {
		// A terminal's Ctrl-C reaches the command directly (same process
		// group); a signal sent to testpg alone is passed on. Either way
		// we wait for the command, then remove the cluster.
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exitErr.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		return 1
	}
}
