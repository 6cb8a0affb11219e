package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/conclavehq/conclave/adapters/sim"
)

// simCmd runs the simulated provider on its own, for benchmarks and for
// pointing another deployment's engines at it.
func simCmd(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	addr := fs.String("addr", "127.0.0.1:9090", "listen on `HOST:PORT`")
	profile := fs.String("profile", "quick", "the latency profile, `quick|seed`")
	scale := fs.Float64("time-scale", 1, "multiply every simulated latency by `X`")
	seed := fs.Int64("seed", 1, "the random seed `N`")
	key := fs.String("api-key", "", "the key `K` every request must carry; empty accepts any non-empty key")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *scale <= 0 {
		return usagef("sim: --time-scale must be positive")
	}
	log := slog.New(slog.NewJSONHandler(cio.stderr, nil))
	return sim.ListenAndServe(ctx, sim.Config{Addr: *addr, Profile: *profile, TimeScale: *scale, Seed: *seed, APIKey: *key, Logger: log})
}
