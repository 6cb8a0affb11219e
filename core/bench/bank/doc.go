// Package bank is Conclave's own question bank for test runs and
// certification: three buckets of questions (light, medium, hard), embedded
// in the binary and versioned, and the seeded, stratified draw that picks a
// run's questions from them.
//
// # Items
//
// A verifiable item comes from a template family — a generator for one
// kind of problem (a multi-step sum, a date difference, a knights-and-knaves
// puzzle, a shortest route) — run on a stream seeded by the bank version,
// the bucket, the family and the item's index. The bucket sets the
// difficulty through the generator's parameters. Each item carries a
// reference answer worked out by the generator (puzzles are checked to have
// exactly one solution by trying every candidate) and a checker, Item.Check,
// that reads the final answer out of a model's free prose.
//
// An open item is curated text (open/*.txt): a trade-off decision, a plan
// under constraints, a critique of an argument, or a question whose honest
// answer is "not enough information". It is judged only, and carries a note
// of what a good answer covers.
//
// Every item has a stable id, "<version>/<bucket>/<family>/<index>", and
// Lookup turns an id back into the item.
//
// # Draws
//
// Draw(version, seed, counts) is a pure function: the same three inputs
// give the same items. It takes each bucket's count from that bucket, half
// verifiable and half open, at most MaxPerTemplate items from any template
// family. A caller stores the version, the seed and the counts with its
// batch to record the draw.
//
// # Versions
//
// A build serves one bank version, Version. Changing any generator, checker,
// curated item or the draw changes the bank, and bumps Version; other
// versions are refused (ErrUnknownVersion). A test pins a digest of every
// item of the current version, so that a change cannot slip in unbumped.
// docs/questionbank.md says how to add a family.
//
// Everything in the package is safe for concurrent use; the pool is built
// once, on first use.
package bank
