package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/conclavehq/conclave/core"
)

// completionRequest is the body shared by chat completions and estimate.
// Fields are kept raw so that a field of the wrong type gets the spec's code
// for that field, not a generic JSON error.
type completionRequest struct {
	Model    json.RawMessage `json:"model"`
	Messages json.RawMessage `json:"messages"`
}

// parseModel reads `model`: a string naming a mode. missing is the code the
// endpoint answers for a missing or non-string model.
func parseModel(raw json.RawMessage, missing core.Code) (string, error) {
	var s string
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
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
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
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
		if len(m.Content) == 0 || json.Unmarshal(m.Content, &out[i].Content) != nil {
			return nil, core.Errorf(core.CodeInvalidMessages, "messages[%d].content must be a string.", i).WithParam(fmt.Sprintf("messages[%d].content", i))
		}
		hasUser = hasUser || out[i].Role == core.RoleUser
	}
	if !hasUser {
		return nil, bad("The messages array holds no user message: there is no question to answer.")
	}
	return out, nil
}
