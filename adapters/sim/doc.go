// Package sim is the simulated provider: a real HTTP server on loopback
// that stands in for the language-model providers when none can be
// reached — for `make run`, tests and benchmarks. It speaks four real
// wire formats (OpenAI chat completions, Anthropic Messages, Gemini
// generateContent, Bedrock Converse, plus the STS AssumeRole that Bedrock
// credentials come from), so that Conclave's real adapters and egress
// layer run against it unchanged. It is a stand-in for providers only.
//
// Each model id ("atlas" for the engine "sim/atlas") has an EngineProfile:
// a latency distribution, failure rates, an answer length, a writing style
// and a tendency to dissent. Two built-in profiles set them: ProfileQuick
// (every call 50–600 ms, the default) and ProfileSeed (calibrated so that a
// wait-for-all three-seat panel reproduces the spec's published
// deliberation latency, median 28.5 s, p90 88.2 s, p99 229.3 s). TimeScale
// shrinks every delay so the seed profile runs in seconds.
//
// Answers are deterministic for a given seed, model and prompt. The
// simulator solves arithmetic, numeric comparisons and syllogisms, writes
// prose otherwise (engines sometimes reach different conclusions on open
// questions), answers judge prompts with the judge JSON Conclave's judging
// protocols expect, answers classifier prompts with the classification
// Conclave's deterministic heuristic (core/classify) gives the conversation,
// and counts tokens as ceil(bytes/4) (see TokenCount).
//
// So that tests know the truth of a benchmark run, every answer it writes
// carries a latent quality, drawn from its engine's Skill for the
// question's bucket and task type (QualityConfig), and a synthesis is worth
// the answers it read plus a configurable lift. An answer to a verifiable
// item of the question bank (core/bench/bank) states the item's reference
// answer with probability σ(quality − the bucket's difficulty), and one of
// its plausible wrong answers otherwise. The server remembers each
// answer's quality and family (Server.Answer); its judges of the pairwise
// and plurality protocols, recognised by their prompts' versioned first
// line, choose by a Bradley–Terry model of those qualities with noise,
// position bias, self-family preference, a tie band, a malformed-reply
// rate and, with a verifiable item's reference in the prompt, a weight for
// the right answer (JudgeConfig), whose probabilities JudgeConfig.Pairwise and
// JudgeConfig.Plurality give.
// Test directives in the prompt, such as [[sim: error=rate_limited count=2]],
// force failures, delays, answers and lengths; docs/simulator.md lists
// them all.
//
// A Server is safe for concurrent use; it serves each call in its own
// goroutine, so thousands of hanging calls cost only their goroutines, and
// a call whose client goes away stops waiting at once.
package sim
