package calls

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// ChatInput is a chat completion's arguments as a carrier received them
// (the REST body, the MCP deliberate tool's arguments): every field kept
// raw, so that a field of the wrong type gets the spec's code for that
// field rather than a generic JSON error.
type ChatInput struct {
	Model    json.RawMessage `json:"model"`
	Messages json.RawMessage `json:"messages"`
	Stream   json.RawMessage `json:"stream"`
	Tier     json.RawMessage `json:"tier"`
	Panel    json.RawMessage `json:"panel"`
}

// ChatParams is a validated chat completion.
type ChatParams struct {
	Model    string
	Messages []core.Message
	Tier     core.Tier
	// MaxCost is panel.max_cost_usd; nil when not sent.
	MaxCost *core.Micros
	// IdempotencyKey is the caller's explicit key; "" derives one from the
	// organisation, the key, the model and the messages.
	IdempotencyKey string
	// RequestHash identifies the request for the idempotency record.
	RequestHash []byte
}

// ParseChat validates a chat completion in the spec's order: model (missing
// → invalid_messages on this endpoint), messages, stream, tier,
// panel.max_cost_usd.
func ParseChat(in *ChatInput) (*ChatParams, error) {
	return parseChat(in, core.CodeInvalidMessages)
}

// parseChat is ParseChat answering missingModel for a missing model.
func parseChat(in *ChatInput, missingModel core.Code) (*ChatParams, error) {
	model, err := parseModel(in.Model, missingModel)
	if err != nil {
		return nil, err
	}
	messages, err := parseMessages(in.Messages)
	if err != nil {
		return nil, err
	}
	if present(in.Stream) {
		var stream bool
		if json.Unmarshal(in.Stream, &stream) != nil {
			return nil, core.Errorf(core.CodeInvalidJSON, "stream must be a boolean.").WithParam("stream")
		}
		if stream {
			return nil, core.Errorf(core.CodeStreamNotSupported, "Streaming is not supported: send stream: false (or omit it) and allow up to 300 seconds for the answer.").WithParam("stream")
		}
	}
	p := &ChatParams{Model: model, Messages: messages, Tier: core.DefaultTier, RequestHash: hashOf(in)}
	if present(in.Tier) {
		var tier string
		if json.Unmarshal(in.Tier, &tier) != nil || !core.Tier(tier).Valid() {
			return nil, core.Errorf(core.CodeInvalidTier, "tier must be experience, plus or pro.").WithParam("tier")
		}
		p.Tier = core.Tier(tier)
	}
	if present(in.Panel) {
		var panel map[string]json.RawMessage
		if json.Unmarshal(in.Panel, &panel) != nil {
			return nil, core.Errorf(core.CodeInvalidJSON, "panel must be an object.").WithParam("panel")
		}
		if raw, ok := panel["max_cost_usd"]; ok {
			m, ok := positiveUSD(raw)
			if !ok {
				return nil, core.Errorf(core.CodeInvalidMaxCostUSD, "panel.max_cost_usd must be a positive number of dollars (at least 0.000001).").WithParam("panel.max_cost_usd")
			}
			p.MaxCost = &m
		}
	}
	return p, nil
}

// EstimateInput is an estimate's arguments as a carrier received them: the
// same body as a chat completion.
type EstimateInput = ChatInput

// EstimateParams is a validated estimate: what a chat completion of the same
// body would be asked.
type EstimateParams struct {
	Model    string
	Messages []core.Message
	Tier     core.Tier
}

// ParseEstimate validates an estimate exactly as ParseChat validates the
// same body — stream, tier and panel.max_cost_usd included, with the same
// codes — except that a missing model is invalid_model on this endpoint.
func ParseEstimate(in *EstimateInput) (*EstimateParams, error) {
	p, err := parseChat(in, core.CodeInvalidModel)
	if err != nil {
		return nil, err
	}
	return &EstimateParams{Model: p.Model, Messages: p.Messages, Tier: p.Tier}, nil
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// parseModel reads `model`: a string naming a mode. missing is the code the
// endpoint answers for a missing or non-string model.
func parseModel(raw json.RawMessage, missing core.Code) (string, error) {
	var s string
	if !present(raw) {
		return "", core.Errorf(missing, "The model field is required: name a mode from GET /v1/models.").WithParam("model")
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", core.Errorf(missing, "The model field must be a string naming a mode from GET /v1/models.").WithParam("model")
	}
	if s == "" {
		return "", core.Errorf(missing, "The model field is empty: name a mode from GET /v1/models.").WithParam("model")
	}
	return s, nil
}

// parseMessages reads `messages`: a non-empty array of {role, content} with
// role system, user or assistant and string content, holding at least one
// user message.
func parseMessages(raw json.RawMessage) ([]core.Message, error) {
	bad := func(format string, args ...any) error {
		return core.Errorf(core.CodeInvalidMessages, format, args...).WithParam("messages")
	}
	if !present(raw) {
		return nil, bad("The messages field is required: an array of {role, content} objects.")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, bad("The messages field must be an array of {role, content} objects.")
	}
	if len(items) == 0 {
		return nil, bad("The messages array is empty; send at least one message.")
	}
	out := make([]core.Message, len(items))
	hasUser := false
	for i, item := range items {
		var m struct {
			Role    json.RawMessage `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(item, &m); err != nil {
			return nil, bad("messages[%d] must be an object with role and content.", i)
		}
		if json.Unmarshal(m.Role, &out[i].Role) != nil || !core.ValidRole(out[i].Role) {
			return nil, core.Errorf(core.CodeInvalidMessages, "messages[%d].role must be system, user or assistant.", i).WithParam(fmt.Sprintf("messages[%d].role", i))
		}
		if !present(m.Content) || json.Unmarshal(m.Content, &out[i].Content) != nil {
			return nil, core.Errorf(core.CodeInvalidMessages, "messages[%d].content must be a string.", i).WithParam(fmt.Sprintf("messages[%d].content", i))
		}
		hasUser = hasUser || out[i].Role == core.RoleUser
	}
	if !hasUser {
		return nil, bad("The messages array holds no user message: there is no question to answer.")
	}
	return out, nil
}

// Bounds on a number literal read from a caller, checked before it is
// parsed exactly: exact parsing costs time in the digits and in the
// exponent (a 900,000-digit literal took 1.8 s of CPU, 1e-1000000 up to
// 40 ms), and no amount of money needs more. An amount of dollars to the
// micro-dollar needs at most 13 digits before the point and 6 after.
const (
	maxNumberLen   = 40
	maxExponentAbs = 30
)

// boundedNumber reports whether a number literal is within the bounds.
func boundedNumber(s string) bool {
	if len(s) > maxNumberLen {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && exp >= -maxExponentAbs && exp <= maxExponentAbs
}

// positiveUSD reads a JSON number of dollars exactly — exponents included —
// and accepts it when it is at least one micro-dollar. Amounts finer than a
// micro-dollar are rounded down. A literal past the bounds above is refused
// before it is parsed.
func positiveUSD(raw json.RawMessage) (core.Micros, bool) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s[0] == '"' || s[0] == '-' || !boundedNumber(s) {
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

// MaxIdempotencyKey is the longest idempotency key accepted.
const MaxIdempotencyKey = 255

// CheckIdempotencyKey refuses an explicit idempotency key that is empty,
// longer than MaxIdempotencyKey or holds anything but visible ASCII.
func CheckIdempotencyKey(k string) error {
	if k == "" || len(k) > MaxIdempotencyKey || !visibleASCII(k) {
		return core.Errorf(core.CodeInvalidRequest, "Idempotency-Key must be one header of 1 to %d visible ASCII characters.", MaxIdempotencyKey).WithParam("Idempotency-Key")
	}
	return nil
}

func visibleASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// derivedKey is the idempotency key of a call that sent none: derived from
// the organisation, the key, the model and the messages, so that an
// identical repeat from the same key is deduplicated.
func derivedKey(orgID, keyID, model string, messages []core.Message) (string, error) {
	msgs, err := json.Marshal(messages)
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	for _, part := range [][]byte{[]byte(orgID), []byte(keyID), []byte(model), msgs} {
		var n [8]byte
		for i, l := 0, len(part); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		sum.Write(n[:])
		sum.Write(part)
	}
	return "derived:" + hex.EncodeToString(sum.Sum(nil)), nil
}

// hashOf identifies a request body for the idempotency record.
func hashOf(v any) []byte {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return sum[:]
}
