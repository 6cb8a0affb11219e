// Package runs is benchmark test runs and certification (POST /v1/tests,
// POST /v1/certify and their polls), the same for every carrier: REST and
// the MCP tools run_test and certify_mode call it as plain Go and render
// what it returns.
//
// A launch is validated (every launch code of the spec), priced (tests at
// 25% off the standard price of a call of each question's depth at its
// tier, core.TestQuestionPrice of modes.StandardPrice, QuoteTest;
// certification $50 flat, core.CertificationPrice), and — unless it is a dry
// run, which starts and bills nothing — charged up front in one
// transaction with its batch, the batch's questions and one durable job per
// question (LaunchStore.Launch), so that no charge exists without its
// batch and no batch without its jobs. An Idempotency-Key is claimed first,
// in a transaction of its own: a repeat finds the batch its key launched,
// or the claim of an attempt that stopped before its launch committed.
//
// Each question's job calls Executor.RunQuestion: the mode's answer and the
// baseline's (Answerer), then the judge panel (Panel), every judgment
// stored once whatever number of times the job runs; the job that finishes
// a batch's last question has it scored (Scorer) and completes it, and a
// certification whose verdict is certified records the version as the
// mode's certified one. The statistics, the question bank and the judges
// are other packages' work; this one names what it needs of them as small
// interfaces (Bank, Answerer, Panel, Scorer).
//
// docs/tests.md describes the endpoints, the prices, the batch's statuses
// and every field of a batch. Everything here is safe for concurrent use.
package runs
