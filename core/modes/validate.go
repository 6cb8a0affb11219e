package modes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Policy decides which rules a spec breaks. policies.ModeValidator
// implements it with policies/modespec.rego.
type Policy interface {
	// Refusals returns every rule in breaks, in any order; an error means
	// the policy could not decide (the caller fails closed).
	Refusals(ctx context.Context, in *Input) ([]Refusal, error)
}

// Validate checks one spec and returns every refusal at once, sorted by
// SortRefusals; none means the spec can be saved, and the mode it converts
// to is returned. A spec over MaxSpecBytes is refused outright: the error
// is CheckSize's *core.Error (request_too_large). Any other error means the
// check itself failed.
//
// Go answers first what no rule can read, or what would make the rules'
// cost grow with the spec: a spec that is not a JSON object, and rows,
// pools and fields past their bounds (bounds). Those refusals alone are
// answered; the policy is not asked. Then the policy decides; after it
// accepts, the spec must also decode into Spec and pass core.CheckMode
// through ToMode. Those two are a backstop against a replaced policy that
// lets through what the engine cannot run: their failure is one
// invalid_value refusal naming the field.
func Validate(ctx context.Context, p Policy, req Request) ([]Refusal, *core.Mode, error) {
	rs, m, _, err := validate(ctx, p, req)
	return rs, m, err
}

// validate is Validate, and the policy input it built (nil when the spec is
// not a JSON object), whose floor the service answers beside the refusals.
func validate(ctx context.Context, p Policy, req Request) ([]Refusal, *core.Mode, *Input, error) {
	if err := CheckSize(req.Spec); err != nil {
		return nil, nil, nil, err
	}
	in, refusal := NewInput(req)
	if refusal != nil {
		return []Refusal{*refusal}, nil, nil, nil
	}
	if rs := bounds(in.Spec.(map[string]any), len(req.Engines)); len(rs) > 0 {
		SortRefusals(rs)
		return rs, nil, in, nil
	}
	rs, err := p.Refusals(ctx, in)
	if err != nil {
		return nil, nil, in, fmt.Errorf("validating a mode spec: %w", err)
	}
	if len(rs) > 0 {
		SortRefusals(rs)
		return rs, nil, in, nil
	}
	s, err := Decode(req.Spec)
	if err == nil {
		var m *core.Mode
		if m, err = ToMode(s, req.Author, req.Engines, req.Available); err == nil {
			return nil, m, in, nil
		}
	}
	return []Refusal{backstop(err)}, nil, in, nil
}

func backstop(err error) Refusal {
	var de *DecodeError
	var fe *core.FieldError
	switch {
	case errors.As(err, &de):
		return Refusal{Code: core.CodeInvalidValue, Message: de.Msg, Path: de.Path}
	case errors.As(err, &fe):
		return Refusal{Code: core.CodeInvalidValue, Message: fe.Msg, Path: strings.TrimPrefix(fe.Field, "mode.")}
	}
	return Refusal{Code: core.CodeInvalidValue, Message: err.Error()}
}
