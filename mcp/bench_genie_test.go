package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/benchtest"
	"github.com/conclavehq/conclave/core/genie"
)

// descriptionsFile is the fixed list of descriptions BenchmarkGenieProposals
// designs modes from: domains, tiers, budgets, family limits and outages,
// each with what it must yield — a proposal, or the code that refuses it.
const descriptionsFile = "testdata/genie_descriptions.jsonl"

// description is one line of descriptionsFile.
type description struct {
	Text string `json:"description"`
	// Expect is "proposal" for a possible description, or the code an
	// impossible one is refused with.
	Expect string `json:"expect"`
	// Unavailable are provider families whose engines are out while it
	// is proposed; Families and MinTier are the limits the description
	// states (a proposal keeps them).
	Unavailable []string  `json:"unavailable"`
	Families    []string  `json:"families"`
	MinTier     core.Tier `json:"min_tier"`
}

func readDescriptions(t testing.TB) []description {
	t.Helper()
	f, err := os.Open(descriptionsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []description
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d description
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("%s line %d: %v", descriptionsFile, len(out)+1, err)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// proposalTally is what a pass over the descriptions yielded.
type proposalTally struct {
	possible, valid, repaired, kept int            // of the possible descriptions
	impossible, refusedRight        int            // of the impossible ones
	repairs                         map[string]int // repairs by kind, over every proposal
	misses                          []string
	propose                         []time.Duration
}

// proposeAll proposes a mode for every description over the tool server,
// one after another (an outage is the bundle's, so they cannot overlap),
// and holds each answer to what the description expects: a proposal that
// validate_mode passes as returned and that keeps the description's limits,
// or a refusal with the expected code.
func proposeAll(t testing.TB, tb *testBundle, descs []description) proposalTally {
	t.Helper()
	tally := proposalTally{repairs: map[string]int{}}
	for i, d := range descs {
		for id, e := range tb.catalog.Engines() {
			if slices.Contains(d.Unavailable, e.Family) {
				tb.gone.Store(id, true)
			} else {
				tb.gone.Delete(id)
			}
		}
		start := time.Now()
		res := tb.callTool(t, tb.key, "genie_propose_mode", map[string]any{"description": d.Text})
		tally.propose = append(tally.propose, time.Since(start))
		miss := func(format string, args ...any) {
			tally.misses = append(tally.misses, fmt.Sprintf("line %d (%q): ", i+1, d.Text)+fmt.Sprintf(format, args...))
		}
		if d.Expect != "proposal" {
			tally.impossible++
			var out selfAnswered
			res.text(t, &out)
			if res.IsError && out.Error.Code == d.Expect && out.HTTPStatus == 422 {
				tally.refusedRight++
			} else {
				miss("want %s (422), got %s", d.Expect, res.Content[0].Text)
			}
			continue
		}
		tally.possible++
		if res.IsError {
			miss("no proposal: %s", res.Content[0].Text)
			continue
		}
		var p proposal
		if err := json.Unmarshal(res.StructuredContent, &p); err != nil {
			t.Fatal(err)
		}
		check := tb.callTool(t, tb.key, "validate_mode", map[string]any{"spec": p.Spec})
		var v validated
		if err := json.Unmarshal(check.StructuredContent, &v); err != nil || !v.OK || v.ModeConfigHash == nil || *v.ModeConfigHash != p.ModeConfigHash {
			miss("proposal not valid as returned: %s", check.Content[0].Text)
			continue
		}
		tally.valid++
		if len(p.Repairs) > 0 {
			tally.repaired++
		}
		for _, r := range p.Repairs {
			kind, _, _ := strings.Cut(r, ":")
			if field, _, ok := strings.Cut(r, " raised to"); ok {
				kind = "raised to the recommended price (" + field[strings.LastIndex(field, ".")+1:] + ")"
			}
			tally.repairs[kind]++
		}
		if keeps(tb, p, d) {
			tally.kept++
		} else {
			miss("proposal does not keep the description's limits: %v", p.Spec["seats_by_tier"])
		}
	}
	for id := range tb.catalog.Engines() {
		tb.gone.Delete(id)
	}
	return tally
}

// keeps reports whether p seats only d's families, at d's least tier or
// above.
func keeps(tb *testBundle, p proposal, d description) bool {
	rows, _ := p.Spec["seats_by_tier"].(map[string]any)
	for tier, row := range rows {
		if d.MinTier != "" && core.Tier(tier).Rank() < d.MinTier.Rank() {
			return false
		}
		seats, _ := row.([]any)
		for _, s := range seats {
			seat, _ := s.(map[string]any)
			for _, k := range []string{"engine", "backup"} {
				id, _ := seat[k].(string)
				e, ok := tb.catalog.Engine(id)
				if id != "" && (!ok || len(d.Families) > 0 && !slices.Contains(d.Families, e.Family)) {
					return false
				}
			}
		}
	}
	return len(rows) > 0
}

// BenchmarkGenieProposals designs a mode with genie_propose_mode, over the
// tool server, from each of the 200 descriptions of descriptionsFile, with
// the simulator as the staff engine, and holds every answer to what its
// line expects. Goals: valid proposals for at least 95% of the possible
// descriptions (valid as validate_mode passes them when sent back, and
// keeping the description's family and tier limits), and every impossible
// one refused with its code. The benchmark fails when either is missed.
//
// In the same run it times, one after another, ask_genie on
// conclave-standard and a plain call of the assistant's first staff engine
// (the simulator at the same time scale), to show what the assistant adds
// to the engine call it is built on.
//
// Reported: valid_pct_of_possible, refused_right_pct_of_impossible,
// repaired (proposals that needed a repair or a second ask), kept_limits_pct,
// propose_p50_ms, ask_p50_ms, staff_call_p50_ms and ask_over_staff_x.
func BenchmarkGenieProposals(b *testing.B) {
	tb := setup(b, func(o *setupOpts) { o.timeScale, o.rpm = 0.01, 1_000_000 })
	descs := readDescriptions(b)
	if len(descs) != 200 {
		b.Fatalf("%s has %d descriptions, want 200", descriptionsFile, len(descs))
	}
	staff := genie.Engines(tb.catalog)
	engine, ok := tb.catalog.Engine(staff[0])
	if !ok {
		b.Fatalf("staff engine %s is not in the catalogue", staff[0])
	}
	ctx := context.Background()
	const asks = 20
	var tally proposalTally
	var askTimes, staffTimes []time.Duration
	b.ResetTimer()
	for range b.N {
		tally = proposeAll(b, tb, descs)
		for range asks {
			start := time.Now()
			res := tb.callTool(b, tb.key, "ask_genie", map[string]any{"mode": "conclave-standard", "message": "What should I test next?"})
			askTimes = append(askTimes, time.Since(start))
			if res.IsError {
				b.Fatalf("ask_genie: %s", res.Content[0].Text)
			}
			start = time.Now()
			ans, err := tb.prov.Call(ctx, staff[0], "", &core.SeatRequest{Model: engine.Model,
				System: "You help the author of a deliberation mode.", Messages: []core.Message{{Role: core.RoleUser, Content: "What should I test next?"}}})
			staffTimes = append(staffTimes, time.Since(start))
			if err != nil || ans.Error != nil || strings.TrimSpace(ans.Text) == "" {
				b.Fatalf("the staff engine did not answer: %v %+v", err, ans)
			}
		}
	}
	b.StopTimer()
	if tally.possible == 0 || tally.impossible == 0 {
		b.Fatalf("the descriptions must hold possible and impossible ones: %+v", tally)
	}
	validPct := 100 * float64(tally.valid) / float64(tally.possible)
	b.ReportMetric(validPct, "valid_pct_of_possible")
	b.ReportMetric(100*float64(tally.refusedRight)/float64(tally.impossible), "refused_right_pct_of_impossible")
	b.ReportMetric(float64(tally.repaired), "repaired")
	b.ReportMetric(100*float64(tally.kept)/float64(max(tally.valid, 1)), "kept_limits_pct")
	b.ReportMetric(ms(quantile(tally.propose, 0.5)), "propose_p50_ms")
	b.ReportMetric(ms(quantile(askTimes, 0.5)), "ask_p50_ms")
	b.ReportMetric(ms(quantile(staffTimes, 0.5)), "staff_call_p50_ms")
	b.ReportMetric(float64(quantile(askTimes, 0.5))/float64(quantile(staffTimes, 0.5)), "ask_over_staff_x")
	b.Logf("%d possible: %d valid (%.1f%%, goal ≥95%%), %d repaired; %d impossible: %d refused with their code (goal all)",
		tally.possible, tally.valid, validPct, tally.repaired, tally.impossible, tally.refusedRight)
	b.Logf("repairs by kind: %v", tally.repairs)
	for _, m := range tally.misses {
		b.Log(m)
	}
	if validPct < 95 || tally.refusedRight < tally.impossible {
		b.Errorf("goal missed: %.1f%% of the possible descriptions valid (goal ≥95%%), %d of %d impossible refused with their code",
			validPct, tally.refusedRight, tally.impossible)
	}
}

func TestGenieProposalsSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkGenieProposals")
}
