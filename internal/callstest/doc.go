// Package callstest drives the call service (core/calls) as a second
// carrier would — the MCP tool server, a benchmark run — with no HTTP in the
// process: plain Go calls on the real PostgreSQL store, the real policies,
// the real engine and the simulated provider. It holds tests only.
package callstest
