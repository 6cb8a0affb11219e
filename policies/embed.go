// Package policies holds Conclave's authorization policies, written in Rego
// and embedded into the binary, and the OPA evaluator that implements
// core.Authorizer on top of them.
//
// The policies decide; Go counts. authz.rego (package conclave.authz)
// answers one decision per request: whether the caller — an API key, a
// person signed in, or a connected app acting for one — may perform the
// action it asks for, on the mode and at the tier it names; its role_grants
// table says what each role of a person may do. Rate limits, concurrency
// and money are counted in Go and never appear here.
// modespec.rego (package conclave.modespec) answers which rules a mode spec
// breaks: every refusal at once (docs/modes.md); ModeValidator evaluates it
// for core/modes.Validate.
//
// Every policy file x.rego has a companion x_test.rego. Both are embedded in
// FS: the evaluator loads only the non-test files, and the tests in this
// package run the Rego tests through OPA's tester. See docs/policies.md for
// the input document, the rules and how to change them.
//
// New loads the policies once (the embedded set, or the .rego files of a
// directory), compiles them and prepares the query
// data.conclave.authz.decision; Engine.Decide then evaluates that prepared
// query for each request. NewModeValidator loads the same set through the
// same loader and prepares data.conclave.modespec.refusals. Decide and
// Refusals are safe for concurrent use.
package policies

import "embed"

// FS holds every .rego file of this directory, tests included. Files whose
// names end in _test.rego are Rego tests; evaluators must skip them.
//
//go:embed *.rego
var FS embed.FS
