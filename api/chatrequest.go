package api

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// chatRequest is a validated POST /v1/chat/completions body.
type chatRequest struct {
	Model    string
	Messages []core.Message
	Tier     core.Tier
	// MaxCost is panel.max_cost_usd; nil when not sent.
	MaxCost *core.Micros
}

// chatBody is the raw body: fields stay raw so each gets the spec's code.
type chatBody struct {
	Model    json.RawMessage `json:"model"`
	Messages json.RawMessage `json:"messages"`
	Stream   json.RawMessage `json:"stream"`
	Tier     json.RawMessage `json:"tier"`
	Panel    json.RawMessage `json:"panel"`
}

// parseChatRequest validates a chat completions body in the spec's order:
// model (missing → invalid_messages on this endpoint), messages, stream,
// tier, panel.max_cost_usd.
func parseChatRequest(b *chatBody) (*chatRequest, error) {
	model, err := parseModel(b.Model, core.CodeInvalidMessages)
	if err != nil {
		return nil, err
	}
	messages, err := parseMessages(b.Messages)
	if err != nil {
		return nil, err
	}
	if present(b.Stream) {
		var stream bool
		if json.Unmarshal(b.Stream, &stream) != nil {
			return nil, core.Errorf(core.CodeInvalidJSON, "stream must be a boolean.").WithParam("stream")
		}
		if stream {
			return nil, core.Errorf(core.CodeStreamNotSupported, "Streaming is not supported: send stream: false (or omit it) and allow up to 300 seconds for the answer.").WithParam("stream")
		}
	}
	req := &chatRequest{Model: model, Messages: messages, Tier: core.DefaultTier}
	if present(b.Tier) {
		var tier string
		if json.Unmarshal(b.Tier, &tier) != nil || !core.Tier(tier).Valid() {
			return nil, core.Errorf(core.CodeInvalidTier, "tier must be experience, plus or pro.").WithParam("tier")
		}
		req.Tier = core.Tier(tier)
	}
	if present(b.Panel) {
		var panel map[string]json.RawMessage
		if json.Unmarshal(b.Panel, &panel) != nil {
			return nil, core.Errorf(core.CodeInvalidJSON, "panel must be an object.").WithParam("panel")
		}
		if raw, ok := panel["max_cost_usd"]; ok {
			m, ok := positiveUSD(raw)
			if !ok {
				return nil, core.Errorf(core.CodeInvalidMaxCostUSD, "panel.max_cost_usd must be a positive number of dollars (at least 0.000001).").WithParam("panel.max_cost_usd")
			}
			req.MaxCost = &m
		}
	}
	return req, nil
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// positiveUSD reads a JSON number of dollars exactly — exponents included —
// and accepts it when it is at least one micro-dollar. Amounts finer than a
// micro-dollar are rounded down.
func positiveUSD(raw json.RawMessage) (core.Micros, bool) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s[0] == '"' || s[0] == '-' {
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(int64(core.MicrosPerUSD), 1))
	micros := new(big.Int).Quo(r.Num(), r.Denom()) // rounds toward zero
	if !micros.IsInt64() || micros.Int64() < 1 {
		return 0, false
	}
	return core.Micros(micros.Int64()), true
}
