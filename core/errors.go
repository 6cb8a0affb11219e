package core

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors for conditions callers branch on. Storage translates driver
// errors into these where the driver is called.
var (
	// ErrNotFound: the thing asked for does not exist (or belongs to another
	// organisation, which callers must not be able to tell apart).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness rule refused the write (a ticker in use, say).
	ErrConflict = errors.New("conflict")
	// ErrInsufficientFunds: a debit would take a balance below what it holds.
	ErrInsufficientFunds = errors.New("insufficient funds")
	// ErrNoBilling: the organisation has no money source: its trial credit
	// expired and it never added prepaid funds. It wraps
	// ErrInsufficientFunds.
	ErrNoBilling = fmt.Errorf("no billing configured: %w", ErrInsufficientFunds)
	// ErrQuotaExceeded: the organisation's monthly spend quota cannot cover
	// the reservation.
	ErrQuotaExceeded = errors.New("monthly quota exceeded")
	// ErrVerificationRequired: an unverified organisation's activation
	// allowance cannot cover the reservation.
	ErrVerificationRequired = errors.New("verification required")
	// ErrOutcomeUnknown: a write was committed or not, and which could not
	// be learnt (the database went away mid-answer). A retry with the same
	// idempotency key finds out: it replays what was kept, or runs again.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrLastOwner: the change would leave an organisation without an
	// owner (demoting or removing its last one).
	ErrLastOwner = errors.New("the organisation's last owner")
	// ErrGone: a single-use or expiring thing (an invitation, a set-up
	// link) was used or has expired.
	ErrGone = errors.New("used or expired")
)

// Error is an error that carries a wire code, and optionally the request
// parameter it concerns and how long the caller should wait before retrying.
// It is what handlers return when the caller must see a specific code.
type Error struct {
	Code    Code
	Message string
	Param   string
	// Status overrides the code table's HTTP status where the spec gives
	// a code two (engines_unavailable: 503, or 422 when no engine is
	// available to build a proposal); 0 keeps the table's (HTTPStatus).
	Status     int
	RetryAfter time.Duration
	// Detail is what the answer carries beside the error object, in the
	// conclave block (REST) or the self-answered tool's extra block (MCP):
	// mode_invalid's refusals, say. Keys are the wire's names.
	Detail map[string]any
	Err    error
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithParam returns a copy of e naming the request parameter at fault.
func (e *Error) WithParam(param string) *Error {
	c := *e
	c.Param = param
	return &c
}

// WithDetail returns a copy of e carrying v under key in its Detail.
func (e *Error) WithDetail(key string, v any) *Error {
	c := *e
	c.Detail = make(map[string]any, len(e.Detail)+1)
	for k, x := range e.Detail {
		c.Detail[k] = x
	}
	c.Detail[key] = v
	return &c
}

// WithStatus returns a copy of e answered with status instead of the
// code table's.
func (e *Error) WithStatus(status int) *Error {
	c := *e
	c.Status = status
	return &c
}

// HTTPStatus is e's status: Status when set, else the code table's.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return InfoFor(e.Code).Status
}

// WithCause returns a copy of e wrapping err.
func (e *Error) WithCause(err error) *Error {
	c := *e
	c.Err = err
	return &c
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// AsError finds the *Error in err's chain. Errors that carry no code become
// internal_error, with their text kept out of the message the caller sees.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, ErrInsufficientFunds) {
		return &Error{Code: CodeInsufficientBalance, Message: "The organisation's balance is too low for this call.", Err: err}
	}
	return &Error{Code: CodeInternalError, Message: "The service failed to complete the request. Retry with the same Idempotency-Key.", Err: err}
}

// ModelNotFound is the one answer for a mode the caller may not know of:
// an unknown id, ticker or version, or a mode outside the key's list. It
// names nothing, so none of these can be told apart. (Another
// organisation's mode is answered by the policy's marketplace rules.)
func ModelNotFound() *Error {
	return Errorf(CodeModelNotFound, "The requested model does not exist or is not available to your organisation. GET /v1/models lists the modes you can call.").WithParam("model")
}
