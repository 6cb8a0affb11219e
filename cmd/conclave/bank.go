package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// bankCalibrate answers `conclave bank calibrate`: the pass rates of the
// baseline answers that complete batches of this build's bank version
// stored, per bucket and per template family, each against its bucket's
// band (bank.Calibrate). It is how an operator re-calibrates the bank's
// buckets on real engines (docs/questionbank.md).
func bankCalibrate(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	engine := fs.String("baseline", "", "only the answers of this baseline `ENGINE` (an engine id, \"sim/sonnet\"); default every baseline")
	if err := parse(fs, args); err != nil {
		return err
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		stored, err := s.BaselineAnswers(ctx, bank.Version, *engine)
		if err != nil {
			return err
		}
		graded := make([]bank.Graded, len(stored))
		batches, engines := map[string]bool{}, map[string]bool{}
		for i, a := range stored {
			graded[i] = bank.Graded{QuestionID: a.QuestionID, Answer: a.Text}
			batches[a.BatchID], engines[a.Engine] = true, true
		}
		c, err := bank.Calibrate(graded)
		if err != nil {
			return err
		}
		out := calibrationJSON{Calibration: c, Batches: len(batches), Baselines: slices.Sorted(maps.Keys(engines))}
		if out.Baselines == nil {
			out.Baselines = []string{}
		}
		if *cf.json {
			return emit(cio.stdout, true, out, "")
		}
		return writeCalibration(cio.stdout, out)
	})
}

// calibrationJSON is bank calibrate's report: the calibration and what it
// read.
type calibrationJSON struct {
	*bank.Calibration
	// Batches is how many complete batches' answers were read.
	Batches int `json:"batches"`
	// Baselines are the baseline engines whose answers were read.
	Baselines []string `json:"baselines"`
}

// writeCalibration prints the report as a table: each bucket, then each
// family, with its pass rate, interval and band, and a flag when outside.
func writeCalibration(w io.Writer, c calibrationJSON) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Bank %s: baseline answers of %d complete batches (baselines: %s); %d open, %d of other bank versions, not checked.\n\n",
		c.Version, c.Batches, strings.Join(orNone(c.Baselines), ", "), c.Open, c.OtherVersion)
	fmt.Fprintf(&b, "%-8s %-16s %6s %6s %7s %15s %11s  %s\n", "bucket", "family", "passed", "n", "rate", "95% interval", "band", "flag")
	row := func(r bank.PassRate) {
		family := r.Family
		if family == "" {
			family = "(all)"
		}
		flag := r.Flag
		if r.Clear {
			flag += " (clear)"
		}
		fmt.Fprintf(&b, "%-8s %-16s %6d %6d %6.1f%% %6.1f–%5.1f%% %4.0f–%3.0f%%  %s\n", r.Bucket, family, r.Passed, r.N,
			100*r.Rate, 100*r.CILo, 100*r.CIHi, 100*r.Band.Lo, 100*r.Band.Hi, flag)
	}
	for _, r := range c.Buckets {
		row(r)
	}
	for _, r := range c.Families {
		row(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}
