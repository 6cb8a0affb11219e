// Package deliberate is the deliberation engine: it classifies a question,
// sends it down the express lane (one engine alone) or convenes the mode's
// seats for rounds of parallel answers, judges each round through a
// core.Protocol, runs critique rounds per the mode's policy, and has the
// synthesis engine write one answer. It reports everything the response's
// panel object and the receipt need in a Result, including every engine
// call it made and what each cost at the source.
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
// Nothing the engine starts outlives Run: every call runs under a child
// context that is cancelled when its round closes, and Run waits for them.
package deliberate
