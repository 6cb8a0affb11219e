// Package deliberatetest tests the deliberation engine (core/deliberate)
// end to end through the real simulated provider (plugins/providers with
// adapters/sim) and the real direct judging protocol, and benchmarks its
// round scheduling (quorum, straggler deadline, hedging) against waiting for
// every seat. It holds tests only: core packages may not import the
// providers, so these tests live outside core.
package deliberatetest
