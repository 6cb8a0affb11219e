package bench_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/benchsim"
)

// A certification run's judgments, here drawn by the simulator for a mode
// ten points better than its baseline, scored under the default thresholds.
func ExampleScore() {
	sim, err := benchsim.New(benchsim.Config{W: 0.6, Rho: 0.5, TieWidth: 0.3, PositionBias: 0.3})
	if err != nil {
		panic(err)
	}
	run := sim.Run(rand.New(rand.NewPCG(1, 2)))
	run.Provenance = bench.Provenance{BaselineID: "sim/atlas", QuestionSeed: "1"}

	r, err := bench.Score(run, bench.Config{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (%s)\n", r.Verdict, r.Config.Version)
	fmt.Printf("W = %.3f, 95%% interval [%.3f, %.3f], n = %d\n", r.W, r.Lower, r.Upper, r.N)
	fmt.Printf("ρ̂ = %.2f, design effect %.1f: %d judgments worth %.0f\n",
		r.Rho, r.DesignEffect, r.JudgmentsValid, r.EffectiveSampleSize)
	for _, g := range r.Gates {
		fmt.Printf("%s %s passed: %v\n", g.ID, g.Name, g.Passed)
	}
	// Output:
	// certified (certify-v1)
	// W = 0.594, 95% interval [0.538, 0.651], n = 150
	// ρ̂ = 0.51, design effect 3.6: 900 judgments worth 252
	// g1 sample passed: true
	// g2 judges passed: true
	// g3 buckets passed: true
	// g4 length passed: true
}
