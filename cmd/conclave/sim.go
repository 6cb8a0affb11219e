package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/conclavehq/conclave/adapters/sim"
)

// simCmd runs the simulated provider on its own, for benchmarks and for
// pointing another deployment's engines at it.
func simCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlags("sim")
	addr := fs.String("addr", "127.0.0.1:9090", "listen address")
	profile := fs.String("profile", "quick", "latency profile: quick or seed")
	scale := fs.Float64("time-scale", 1, "multiply every simulated latency by this")
	seed := fs.Int64("seed", 1, "random seed")
	key := fs.String("api-key", "", "the key every request must carry; empty accepts any non-empty key")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *scale <= 0 {
		return usagef("sim: --time-scale must be positive")
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	return sim.ListenAndServe(ctx, sim.Config{Addr: *addr, Profile: *profile, TimeScale: *scale, Seed: *seed, APIKey: *key, Logger: log})
}
