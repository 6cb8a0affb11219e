package wire

import (
	"bytes"
	"encoding/json"

	"github.com/conclavehq/conclave/core"
)

// Marshal is how every carrier encodes the bodies it sends: HTML left
// unescaped (answers quote code and prose), a trailing newline.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ErrorObject is the error object of the spec's envelope, and of a
// forwarding tool's failure.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Param   *string `json:"param"`
}

// ErrorOf is e's error object: its code's type from the one code table, and
// param null when e names none.
func ErrorOf(e *core.Error) ErrorObject {
	o := ErrorObject{Message: e.Message, Type: string(core.InfoFor(e.Code).Type), Code: string(e.Code)}
	if e.Param != "" {
		p := e.Param
		o.Param = &p
	}
	return o
}
