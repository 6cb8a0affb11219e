package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// required arguments with -32602 by their schema (a forwarding tool
	// passes the call on, so the REST code comes back). They also refuse
	// arguments their input schema does not declare.
	selfAnswered bool
	// check, when set, refuses a call's arguments with -32602 before the
	// tool runs, whatever kind of tool it is: what is wrong with them, or
	// "". run_test and certify_mode, forwarding tools, refuse a call that
	// neither launches nor polls.
	check    func(args map[string]json.RawMessage) string
	required []string
	// requiredAny are groups of arguments of which a self-answered call
	// passes at least one (save_mode: spec or mode_id).
	requiredAny [][]string
	// aliases maps an argument to the one it is another name for
	// (list_mode's mode is mode_id): a self-answered call passes either, or
	// both with the same value, and the tool reads only the second.
	aliases map[string]string
	run     func(ctx context.Context, p *access.Principal, c *toolCall) *toolResult
	// action is the policy action whose scope a call needs (a run tool's
	// launch and poll need the same scope); "" when it needs none. A
	// connected app granted no scope for it is refused with HTTP 403
	// before the call runs.
	action string
	// args are the arguments the input schema declares; newToolSet reads
	// them from it.
	args map[string]argSchema
}

// argSchema is what the tool server checks of an argument of a
// self-answered tool: the parts of its JSON Schema that say which values
// it takes.
type argSchema struct {
	Type      string   `json:"type"`
	MinLength *int     `json:"minLength"`
	Minimum   *float64 `json:"minimum"`
}

// takes reports whether the tool's input schema declares the argument.
func (t *tool) takes(name string) bool {
	_, ok := t.args[name]
	return ok
}

// readArgs reads the arguments the tool's input schema declares.
func (t *tool) readArgs() {
	var in struct {
		Properties map[string]argSchema `json:"properties"`
	}
	_ = json.Unmarshal(t.desc.InputSchema, &in) // a schema without properties takes none
	t.args = in.Properties
}

// argProblem says how raw, the value of the argument name, breaks its
// schema; "" when it does not.
func (t *tool) argProblem(name string, raw json.RawMessage) string {
	a := t.args[name]
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return name + " is not JSON"
	}
	switch a.Type {
	case "object":
		if _, ok := v.(map[string]any); !ok {
			return name + " must be a JSON object"
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return name + " must be true or false"
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return name + " must be a string"
		}
		if a.MinLength != nil && utf8.RuneCountInString(s) < *a.MinLength {
			return name + " cannot be empty"
		}
	case "integer":
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
			return name + " must be a whole number"
		}
		if a.Minimum != nil && float64(i) < *a.Minimum {
			return fmt.Sprintf("%s must be at least %g", name, *a.Minimum)
		}
	}
	return ""
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

// maxProgressTokenBytes bounds a string progressToken: every progress
// notification echoes it.
const maxProgressTokenBytes = 128

// progressTokenProblem is what is wrong with the call's progressToken, or
// "" when it is absent, a string of at most maxProgressTokenBytes or an
// integer (one that fits in 64 bits).
func (m callMeta) progressTokenProblem() string {
	if !present(m.ProgressToken) {
		return ""
	}
	var s string
	if json.Unmarshal(m.ProgressToken, &s) == nil {
		if len(s) <= maxProgressTokenBytes {
			return ""
		}
	} else if _, err := strconv.ParseInt(string(bytes.TrimSpace(m.ProgressToken)), 10, 64); err == nil {
		return ""
	}
	return fmt.Sprintf("_meta.progressToken must be a string of at most %d bytes or an integer.", maxProgressTokenBytes)
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
	Meta              map[string]any  `json:"_meta,omitempty"`
	// code is the wire code of a failure (IsError), for the request's log
	// line and the tool metrics; never sent.
	code core.Code
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
		t.readArgs()
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
// tool name, arguments that are not an object, for a self-answered tool an
// argument it does not take, one whose value its schema refuses, or a
// missing required one, and arguments a tool's check refuses.
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
	if msg := cp.Meta.progressTokenProblem(); msg != "" {
		return invalid("%s", msg)
	}
	c := &toolCall{name: *cp.Name, args: map[string]json.RawMessage{}, rawArgs: cp.Arguments, meta: cp.Meta}
	if present(cp.Arguments) {
		if err := json.Unmarshal(cp.Arguments, &c.args); err != nil {
			return invalid("the arguments of %s must be an object.", c.name)
		}
	}
	if t.selfAnswered {
		if msg := t.checkArgs(c.args); msg != "" {
			return invalid("%s", msg)
		}
	}
	if t.check != nil {
		if msg := t.check(c.args); msg != "" {
			return invalid("%s", msg)
		}
	}
	return t, c, nil
}

// checkArgs checks a self-answered call's arguments against the tool's
// input schema, and resolves aliases: what is wrong with them, or "". A
// null argument counts as absent.
func (t *tool) checkArgs(args map[string]json.RawMessage) string {
	name := t.desc.Name
	for _, arg := range slices.Sorted(maps.Keys(args)) {
		if !t.takes(arg) {
			return fmt.Sprintf("%s takes no argument %q; tools/list gives its input schema.", name, arg)
		}
		if !present(args[arg]) {
			delete(args, arg)
			continue
		}
		if p := t.argProblem(arg, args[arg]); p != "" {
			return fmt.Sprintf("%s: %s.", name, p)
		}
	}
	for alias, arg := range t.aliases {
		v, ok := args[alias]
		if !ok {
			continue
		}
		if other, both := args[arg]; both && !bytes.Equal(v, other) {
			return fmt.Sprintf("%s: pass %s or %s (the same argument), not two different values.", name, arg, alias)
		}
		args[arg] = v
		delete(args, alias)
	}
	for _, group := range t.requiredAny {
		if !slices.ContainsFunc(group, func(arg string) bool { return present(args[arg]) }) {
			return fmt.Sprintf("%s needs %s.", name, strings.Join(group, " or "))
		}
	}
	var missing []string
	for _, arg := range t.required {
		if !present(args[arg]) {
			missing = append(missing, arg)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s needs the argument(s) %s.", name, strings.Join(missing, ", "))
	}
	return ""
}

// call runs a tools/call under its request id (messageRequestID).
func (s *toolSet) call(ctx context.Context, p *access.Principal, m *message, progress func(calls.Progress)) *response {
	t, c, bad := s.parseCall(m)
	if bad != nil {
		return bad
	}
	c.requestID, c.progress = messageRequestID(ctx), progress
	return resultOf(m.ID, t.run(ctx, p, c))
}

// present reports whether raw holds a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
