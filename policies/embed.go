// Package policies holds Conclave's authorization policies, written in Rego
// and embedded into the binary.
//
// The policies decide; Go counts. authz.rego (package conclave.authz)
// answers one decision per /v1 request: whether the caller's key may perform
// the action it asks for, on the mode and at the tier it names. Rate limits,
// concurrency and money are counted in Go and never appear here.
//
// Every policy file x.rego has a companion x_test.rego. Both are embedded in
// FS: the evaluator (internal/policy) loads only the non-test files, and the
// tests in this package run the Rego tests through OPA's tester. See
// docs/policies.md for the input document, the rules and how to change them.
package policies

import "embed"

// FS holds every .rego file of this directory, tests included. Files whose
// names end in _test.rego are Rego tests; evaluators must skip them.
//
//go:embed *.rego
var FS embed.FS
