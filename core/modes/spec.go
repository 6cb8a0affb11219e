package modes

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Schema is the JSON Schema (draft 2020-12) of the mode spec. The OpenAPI
// document refers to it; TestSchemaMatchesSpec holds it to Spec.
//
//go:embed spec.schema.json
var Schema []byte

// AutoEngine in a seat's engine asks for an engine picked from the pool.
const AutoEngine = "auto"

// Spec is a mode as its author writes it. docs/modes.md describes every
// field and the rule behind every refusal.
type Spec struct {
	Name        string `json:"name"`
	Ticker      string `json:"ticker"`
	Description string `json:"description,omitempty"`
	UseWhen     string `json:"use_when"`

	// MinTier is the lowest tier a single Seats row serves (it serves every
	// tier from it up). With SeatsByTier it is optional and, when given,
	// must be the lowest tier of the rows.
	MinTier core.Tier `json:"min_tier,omitempty"`
	// Seats is one row for every tier from MinTier up; SeatsByTier is a row
	// per tier. A spec gives exactly one of them.
	Seats       []Seat               `json:"seats,omitempty"`
	SeatsByTier map[core.Tier][]Seat `json:"seats_by_tier,omitempty"`
	// Pool lists the engines auto seats are drawn from, in order of
	// preference; FamilyDiversity is the fewest provider families a row of
	// auto seats must hold (0 when not set).
	Pool            []string `json:"pool,omitempty"`
	FamilyDiversity int      `json:"family_diversity,omitempty"`

	Staff map[string]Staff `json:"staff,omitempty"`

	Critique           string       `json:"critique"`
	MaxRounds          int          `json:"max_rounds"`
	Quorum             int          `json:"quorum,omitempty"`
	StragglerDeadlineS float64      `json:"straggler_deadline_s,omitempty"`
	HedgePercentile    float64      `json:"hedge_percentile,omitempty"`
	ExpressThreshold   float64      `json:"express_threshold,omitempty"`
	CostCeilingUSD     core.Dollars `json:"cost_ceiling_usd"`

	APICommercial *APICommercial `json:"api_commercial,omitempty"`

	// Fidelity is a retired setting, read only to refuse it
	// (fidelity_retired, fidelity_inert).
	Fidelity *string `json:"fidelity,omitempty"`
}

// Seat is one seat of a row: a fixed engine and its backup, or AutoEngine.
type Seat struct {
	Engine string `json:"engine"`
	Backup string `json:"backup,omitempty"`
}

// Staff is one orchestration role. Tier, when set, is the tier the role is
// held to: its engine and backup must both reach it.
type Staff struct {
	Engine string    `json:"engine"`
	Backup string    `json:"backup,omitempty"`
	Tier   core.Tier `json:"tier,omitempty"`
}

// APICommercial is what the mode charges API callers on top of tokens, and
// its price band as listed.
type APICommercial struct {
	PriceTier        string                  `json:"price_tier,omitempty"`
	SurchargeByDepth map[string]core.Dollars `json:"q_surcharge_by_depth,omitempty"`
	SurchargeUSD     *core.Dollars           `json:"q_surcharge_usd,omitempty"`
	ExpressUSD       *core.Dollars           `json:"q_surcharge_express_usd,omitempty"`
	// PriceOverrideAcknowledged is read only to refuse it
	// (price_override_not_allowed).
	PriceOverrideAcknowledged *bool `json:"price_override_acknowledged,omitempty"`
}

// DecodeError is a spec that does not decode into Spec: Path names the
// field ("" for the document), Msg what is wrong with it.
type DecodeError struct {
	Path string
	Msg  string
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return "mode spec: " + e.Msg
	}
	return "mode spec: " + e.Path + ": " + e.Msg
}

// Decode reads one spec strictly: an unknown field, a value of the wrong
// type or trailing data is a *DecodeError naming the field.
func Decode(b []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &DecodeError{Msg: "trailing data after the spec"}
	}
	return &s, nil
}

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &DecodeError{Path: te.Field, Msg: fmt.Sprintf("%s is not a %s", te.Value, te.Type)}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &DecodeError{Path: strings.Trim(name, `"`), Msg: "unknown field"}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &DecodeError{Msg: "not a JSON object: " + err.Error()}
	}
	// A core.Dollars or core.Tier that refused its value.
	return &DecodeError{Msg: err.Error()}
}
