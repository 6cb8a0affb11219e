// Package modes holds what an organisation authors when it designs a mode:
// the mode spec (Spec, a JSON document described in docs/modes.md and by
// the JSON Schema in spec.schema.json), the refusals a validation returns,
// the price floor, and the conversion of a valid spec into the core.Mode
// the engine runs.
//
// The rules a spec must pass are not here: they are Rego
// (policies/modespec.rego), so that a policy author can tighten them with
// `--policy-dir` without rebuilding. Validate runs them through a Policy,
// and then holds the accepted spec to core.CheckMode, the same check every
// configured mode passes, so a spec the policy accepts always runs.
//
// Everything in this package is pure and safe for concurrent use.
package modes
