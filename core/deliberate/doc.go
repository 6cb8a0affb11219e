// Package deliberate is the deliberation engine: it classifies a question,
// sends it down the express lane (one engine alone) or convenes the mode's
// seats for rounds of parallel answers, judges each round through a
// core.Protocol, runs critique rounds per the mode's policy and budget, and
// has the synthesis engine write one answer. It reports everything the
// response's panel object and the receipt need in a Result, including every
// engine call it made and what each cost at the source.
//
// # Plan, then execute
//
// Engine.Plan decides a deliberation before any seat fires: it classifies
// the question (the mode's classifier engine, Config.Fallback when that
// fails or none is configured), chooses the lane, and projects what the
// first round will cost and so the least the question needs (Plan.MinCost).
// A caller can refuse a call whose ceiling is too low for that before
// spending anything on seats, and the estimate endpoint stops there, so an
// estimate classifies exactly as a call does. Engine.Execute runs the plan;
// its Result carries the plan's classification and classifier calls.
// Engine.Run does both for a caller with nothing to check in between.
//
// # Budget
//
// Critique rounds stop before one whose projected cost, with the projected
// synthesis after it, would take what the deliberation has spent (the
// classifier included) past its limit: the lower of the mode's CostCeiling
// and the call's Request.Budget, both in real token cost. The result then
// finishes FinishCostCap: a real answer from a shorter deliberation. The
// first round always runs; the limit is the caller's to check against
// Plan.MinCost beforehand.
//
// # Projected cost
//
// A projection prices calls with core.CallCost from tokens the engine
// expects. Input: Config.CountTokens of the conversation for a seat's first
// answer; for a critique answer, that plus every previous answer plus
// instructions (a constant 300 tokens); for a judge or synthesis call, the
// question plus the answers it reads plus instructions, on the role's
// primary engine, one call per round. Output: what the seat wrote last
// round in a critique round; otherwise the engine's mean output over its
// last 64 answers in that role once it has 8, else DefaultOutputTokens
// (512), never above Config.SeatMaxTokens. Projections only decide; the bill
// uses the tokens providers report.
//
// # Rounds
//
// A round sends every seat its prompt at once. Each seat tries its primary
// engine; when the primary fails the seat's backup runs (a substitution), and
// when the primary has not answered after the hedge delay the backup is
// started beside it (a hedge) and the first answer wins. A round closes when
// every seat has answered or given up, or — when the mode sets a quorum —
// once a quorum has answered and the mode's straggler deadline, counted from
// the start of the round, has passed. Calls still running when a round closes
// are cancelled and recorded as cancelled with the tokens their provider
// reported (zero when it reported none); the engine never estimates tokens.
//
// # Hedging
//
// A primary is hedged once it has run longer than the hedge delay or its
// engine's recent p-th percentile latency, whichever is longer: p is the
// mode's HedgePercentile (DefaultHedgePercentile when unset), over the
// engine's last 256 answers; an engine with fewer than 16 on record is
// hedged after the delay alone. An engine whose answers all take 30 s is
// thus not hedged at 10 s once the engine has seen it answer, and one far
// slower than its history is.
//
// Config.HedgeAfter fixes the hedge delay. When it is zero the delay is
// derived per mode: half the mode's straggler deadline when the mode has a
// quorum and a straggler deadline, and no hedging otherwise (a mode that
// waits for every seat gains nothing from racing a backup it would wait for
// anyway). A negative HedgeAfter turns hedging off. The same rule hedges
// the staff calls (classifier, judge, synthesis) with their backups: they run
// one after another, so a single slow staff call would otherwise set the
// whole deliberation's tail. The express lane hedges its one seat likewise.
//
// Hedges are budgeted per engine: each hedgeable primary earns 2·(100−p)% of
// a hedge (twice what a steady engine overruns), credit saves up to 16, and
// a hedge spends one. When an engine slows
// down for everyone at once — an outage, or the gateway's own overload
// stretching every call past its history — at most the budget's backups
// start, not one beside every primary. A primary that fails still gets its
// backup whatever the budget.
//
// A primary runs on the goroutine that asked for it, and a hedge on its
// timer's: no goroutine only waits for a call.
//
// # Judging
//
// Each round's answers are shuffled (seeded by Config.Seed), labelled A, B, …
// and handed to the judging protocol, whose prompts go to the mode's judge
// staff engine (its backup on failure). When no verdict is readable the
// medoid answer — the one with the highest mean token-set (Jaccard)
// similarity to the others — is taken as best, and the round's convergence is
// unknown (nil), which never stops critique early.
//
// # Cost
//
// A call's cost at the source is core.CallCost, the one price function:
// its input tokens at the engine's input price plus its output tokens at the
// output price, per million tokens, rounded up to a whole micro-dollar.
// Reasoning tokens are reported but not priced separately: providers count
// them inside the output tokens.
//
// Nothing the engine starts outlives Plan, Execute or Run: every call runs
// under a child context that is cancelled when its round closes, and they
// wait for them.
package deliberate
