package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// ModeQuery is the query a policy set answers to validate a mode spec: a
// set of refusals {code, message, path, …} (see modespec.rego).
const ModeQuery = "data.conclave.modespec.refusals"

var modeRule = ast.MustParseRef(ModeQuery)

// ModeValidator decides which rules a mode spec breaks, with the prepared
// query ModeQuery over the same policy set New loads (the embedded set, or
// Config.Dir). It is safe for concurrent use.
type ModeValidator struct {
	query rego.PreparedEvalQuery
}

var _ modes.Policy = (*ModeValidator)(nil)

// NewModeValidator loads and compiles the policy set cfg names and prepares
// ModeQuery. A set that does not define it fails with an error naming the
// package it needs; so does one whose answer for an ordinary spec is not a
// set of refusals.
func NewModeValidator(ctx context.Context, cfg Config) (*ModeValidator, error) {
	compiler, source, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	if len(compiler.GetRules(modeRule)) == 0 {
		return nil, fmt.Errorf("policy: loading %s: no rule defines %s (a package conclave.modespec with a refusals rule is required)", source, ModeQuery)
	}
	pq, err := rego.New(
		rego.Query(ModeQuery),
		rego.Compiler(compiler),
		rego.SetRegoVersion(ast.RegoV1),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy: preparing %s: %w", ModeQuery, err)
	}
	v := &ModeValidator{query: pq}
	probe, _ := modes.NewInput(modes.Request{Spec: []byte(`{}`)})
	if _, err := v.Refusals(ctx, probe); err != nil {
		return nil, fmt.Errorf("policy: checking %s: %w", source, err)
	}
	return v, nil
}

// modeInputValue is in as the policy reads it. The spec, already decoded
// into plain JSON values, becomes Rego values directly; only the small rest
// of the input goes through JSON, so that a large spec is not encoded and
// decoded once more (the cost would grow with it).
func modeInputValue(in *modes.Input) (ast.Value, error) {
	rest := *in
	rest.Spec = nil
	b, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	doc["spec"] = in.Spec
	return ast.InterfaceToValue(doc)
}

// Refusals evaluates the rules for one input. An undefined answer, or one
// that is not a set of refusals each with a code, is an error: the caller
// fails closed.
func (v *ModeValidator) Refusals(ctx context.Context, in *modes.Input) ([]modes.Refusal, error) {
	if in == nil {
		return nil, fmt.Errorf("policy: nil input")
	}
	value, err := modeInputValue(in)
	if err != nil {
		return nil, fmt.Errorf("policy: encoding the input of %s: %w", ModeQuery, err)
	}
	rs, err := v.query.Eval(ctx, rego.EvalParsedInput(value))
	if err != nil {
		return nil, fmt.Errorf("policy: evaluating %s: %w", ModeQuery, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, fmt.Errorf("policy: %s is undefined", ModeQuery)
	}
	// The answer is plain JSON values; one round trip types it.
	b, err := json.Marshal(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, fmt.Errorf("policy: encoding %s: %w", ModeQuery, err)
	}
	var out []modes.Refusal
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("policy: %s is not a set of refusals {code, message, path}: %w", ModeQuery, err)
	}
	for _, r := range out {
		if r.Code == "" {
			return nil, fmt.Errorf("policy: %s holds a refusal without a code: %q", ModeQuery, r.Message)
		}
		if !core.KnownCode(r.Code) {
			return nil, fmt.Errorf("policy: %s holds the code %q, which core does not know", ModeQuery, r.Code)
		}
	}
	if out == nil {
		out = []modes.Refusal{}
	}
	return out, nil
}
