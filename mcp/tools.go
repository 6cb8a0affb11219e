package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
)

// guidance is the spec's advice on when to deliberate, carried by
// initialize and by the deliberate tool's description.
const guidance = "Conclave convenes a panel of language models that deliberate and return one synthesised answer. " +
	"Use deliberate for judgement calls: decisions, trade-offs, reviews, open questions where several views help. " +
	"Use a single model instead for lookups, syntax, formatting, conversions, arithmetic and verbatim reproduction. " +
	"estimate classifies a question and quotes its surcharge for free, without running the panel."

// tool is one tool of the server: how tools/list describes it and what
// runs when it is called.
type tool struct {
	desc toolDesc
	// selfAnswered tools answer in the tool server itself; the others
	// forward to the REST endpoint's core service. Only self-answered
	// calls count toward a batch's limit, and only they refuse missing
	// required arguments with -32602 (a forwarding tool passes the call
	// on, so the REST code comes back). They also refuse arguments their
	// input schema does not declare.
	selfAnswered bool
	required     []string
	run          func(ctx context.Context, p *access.Principal, c *toolCall) *toolResult
}

// takes reports whether the tool's input schema declares the argument.
func (t *tool) takes(name string) bool {
	var in struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(t.desc.InputSchema, &in) // a schema without properties takes none
	_, ok := in.Properties[name]
	return ok
}

// toolDesc is a tool as tools/list describes it.
type toolDesc struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  annotations     `json:"annotations"`
}

// annotations are the hints MCP clients show and act on. Every field is
// sent: a missing hint means its pessimistic default to a client.
type annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

type toolList struct {
	Tools []toolDesc `json:"tools"`
}

// toolCall is one tools/call as a tool sees it.
type toolCall struct {
	name      string
	args      map[string]json.RawMessage
	rawArgs   json.RawMessage
	meta      callMeta
	requestID string
	// progress is told the steps of a deliberation the call runs; nil
	// unless the call is answered with an event stream.
	progress func(calls.Progress)
}

// callMeta is what the tool server reads from a call's _meta.
type callMeta struct {
	ProgressToken  json.RawMessage `json:"progressToken"`
	IdempotencyKey *string         `json:"conclave/idempotency-key"`
}

type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      callMeta        `json:"_meta"`
}

// toolResult is a tools/call result.
type toolResult struct {
	Content           []textContent   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolSet is the server's tools in the order tools/list gives them.
type toolSet struct {
	list   []toolDesc
	byName map[string]*tool
}

func newToolSet(tools ...*tool) *toolSet {
	s := &toolSet{list: []toolDesc{}, byName: map[string]*tool{}}
	for _, t := range tools {
		t.desc.Annotations.Title = t.desc.Title
		s.list = append(s.list, t.desc)
		s.byName[t.desc.Name] = t
	}
	return s
}

// selfAnswered reports whether m calls a self-answered tool.
func (s *toolSet) selfAnswered(m *message) bool {
	if m.Method == nil || *m.Method != "tools/call" {
		return false
	}
	var cp callParams
	if json.Unmarshal(m.Params, &cp) != nil || cp.Name == nil {
		return false
	}
	t, ok := s.byName[*cp.Name]
	return ok && t.selfAnswered
}

// parseCall reads a tools/call's params: -32602 for a missing or unknown
// tool name, arguments that are not an object, or — for a self-answered
// tool — an argument it does not take or a missing required one.
func (s *toolSet) parseCall(m *message) (*tool, *toolCall, *response) {
	invalid := func(format string, args ...any) (*tool, *toolCall, *response) {
		return nil, nil, errorOf(m.ID, codeInvalidParams, "Invalid params: "+fmt.Sprintf(format, args...), nil)
	}
	var cp callParams
	if err := json.Unmarshal(m.Params, &cp); err != nil || cp.Name == nil {
		return invalid("tools/call needs params with the tool's name and its arguments.")
	}
	t, ok := s.byName[*cp.Name]
	if !ok {
		return invalid("unknown tool %q; tools/list names the tools.", *cp.Name)
	}
	c := &toolCall{name: *cp.Name, args: map[string]json.RawMessage{}, rawArgs: cp.Arguments, meta: cp.Meta}
	if present(cp.Arguments) {
		if err := json.Unmarshal(cp.Arguments, &c.args); err != nil {
			return invalid("the arguments of %s must be an object.", c.name)
		}
	}
	if t.selfAnswered {
		for name := range c.args {
			if !t.takes(name) {
				return invalid("%s takes no argument %q; tools/list gives its input schema.", c.name, name)
			}
		}
		var missing []string
		for _, name := range t.required {
			if !present(c.args[name]) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return invalid("%s needs the argument(s) %s.", c.name, strings.Join(missing, ", "))
		}
	}
	return t, c, nil
}

// call runs a tools/call.
func (s *toolSet) call(ctx context.Context, p *access.Principal, m *message, progress func(calls.Progress)) *response {
	t, c, bad := s.parseCall(m)
	if bad != nil {
		return bad
	}
	c.requestID, c.progress = core.NewID("req"), progress
	return resultOf(m.ID, t.run(ctx, p, c))
}

// present reports whether raw holds a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
