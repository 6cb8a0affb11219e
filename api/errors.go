package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Error types of the envelope.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typePermission     = "permission_error"
	typeRateLimit      = "rate_limit_error"
	typeAPI            = "api_error"
)

// Retry advice, as in the spec's Retry column.
const (
	retryNo    = "no"
	retryYes   = "yes"
	retryWait  = "wait"
	retryMaybe = "maybe"
)

type codeInfo struct {
	Status int
	Type   string
	Retry  string
}

// codeTable is the one place a wire code becomes an HTTP status, an error
// type and retry advice. Every code core names is here; a test checks that.
var codeTable = map[core.Code]codeInfo{
	// Core codes.
	core.CodeInvalidAPIKey:            {401, typeAuthentication, retryNo},
	core.CodeRevokedAPIKey:            {401, typeAuthentication, retryNo},
	core.CodeInvalidOAuthToken:        {401, typeAuthentication, retryNo},
	core.CodeOrgSuspended:             {403, typePermission, retryNo},
	core.CodeBrowserOriginNotAllowed:  {403, typePermission, retryNo},
	core.CodeInsufficientScope:        {403, typePermission, retryNo},
	core.CodeInvalidModel:             {400, typeInvalidRequest, retryNo},
	core.CodeInvalidMessages:          {400, typeInvalidRequest, retryNo},
	core.CodeInvalidTier:              {400, typeInvalidRequest, retryNo},
	core.CodeInvalidMaxCostUSD:        {400, typeInvalidRequest, retryNo},
	core.CodeStreamNotSupported:       {400, typeInvalidRequest, retryNo},
	core.CodeContextLengthExceeded:    {413, typeInvalidRequest, retryNo},
	core.CodeModelNotFound:            {404, typeInvalidRequest, retryNo},
	core.CodeTierNotPermitted:         {403, typePermission, retryNo},
	core.CodeModeNotPermitted:         {403, typePermission, retryNo},
	core.CodeModeNotPublished:         {403, typePermission, retryNo},
	core.CodeLabNotAvailable:          {403, typePermission, retryNo},
	core.CodeRequestInProgress:        {409, typeInvalidRequest, retryWait},
	core.CodeMissingRequestID:         {400, typeInvalidRequest, retryNo},
	core.CodeReceiptNotFound:          {404, typeInvalidRequest, retryNo},
	core.CodeMethodNotAllowed:         {405, typeInvalidRequest, retryNo},
	core.CodeVerificationRequired:     {402, typeInvalidRequest, retryNo},
	core.CodeInsufficientBalance:      {402, typeInvalidRequest, retryNo},
	core.CodeQuotaExceeded:            {402, typeInvalidRequest, retryNo},
	core.CodeNoBillingConfigured:      {402, typeInvalidRequest, retryNo},
	core.CodePlanLimitReached:         {402, typeInvalidRequest, retryNo},
	core.CodeRateLimitExceeded:        {429, typeRateLimit, retryYes},
	core.CodeConcurrencyLimitExceeded: {429, typeRateLimit, retryYes},
	core.CodeTooManyConcurrent:        {429, typeRateLimit, retryYes},
	core.CodeClassificationFailed:     {502, typeAPI, retryYes},
	core.CodeServiceUnavailable:       {503, typeAPI, retryYes},
	core.CodeModeUnavailable:          {503, typeAPI, retryYes},
	core.CodeUpstreamProviderError:    {502, typeAPI, retryYes},
	core.CodeModeResolutionMismatch:   {502, typeAPI, retryYes},
	core.CodeCostUnreadable:           {502, typeAPI, retryYes},
	core.CodeInternalError:            {500, typeAPI, retryYes},

	// Conclave's additions.
	core.CodeUnknownURL:           {404, typeInvalidRequest, retryNo},
	core.CodeInvalidJSON:          {400, typeInvalidRequest, retryNo},
	core.CodeRequestTooLarge:      {413, typeInvalidRequest, retryNo},
	core.CodeUnsupportedMediaType: {415, typeInvalidRequest, retryNo},

	// Test and certification launch codes.
	core.CodeInvalidBuckets:             {400, typeInvalidRequest, retryNo},
	core.CodeInvalidBucket:              {400, typeInvalidRequest, retryNo},
	core.CodeInvalidBucketCount:         {400, typeInvalidRequest, retryNo},
	core.CodeTooManyQuestions:           {400, typeInvalidRequest, retryNo},
	core.CodeInvalidJudges:              {400, typeInvalidRequest, retryNo},
	core.CodeInvalidQuestions:           {400, typeInvalidRequest, retryNo},
	core.CodeInvalidDifficulty:          {400, typeInvalidRequest, retryNo},
	core.CodeInvalidQuestionCount:       {400, typeInvalidRequest, retryNo},
	core.CodeInvalidTiers:               {400, typeInvalidRequest, retryNo},
	core.CodeInvalidPunchUp:             {400, typeInvalidRequest, retryNo},
	core.CodePriceUnavailable:           {400, typeInvalidRequest, retryNo},
	core.CodeModeNotOwned:               {403, typePermission, retryNo},
	core.CodeLaunchRefused:              {400, typeInvalidRequest, retryNo},
	core.CodeListingRequired:            {400, typeInvalidRequest, retryNo},
	core.CodeMissingBatchID:             {400, typeInvalidRequest, retryNo},
	core.CodeBatchNotFound:              {404, typeInvalidRequest, retryNo},
	core.CodeProviderUnavailable:        {409, typeAPI, retryWait},
	core.CodeIdempotencyKeyReused:       {422, typeInvalidRequest, retryNo},
	core.CodeReconciliationRequired:     {409, typeInvalidRequest, retryNo},
	core.CodeTestLaunchLimitExceeded:    {429, typeRateLimit, retryYes},
	core.CodeCertifyLaunchLimitExceeded: {429, typeRateLimit, retryYes},

	// Authoring and tool-server codes that REST can also return.
	core.CodeTestKeyNotAllowed: {403, typePermission, retryNo},
	core.CodeModeNotAllowed:    {403, typePermission, retryNo},
	core.CodeForbidden:         {403, typePermission, retryNo},
	core.CodeModeNotFound:      {404, typeInvalidRequest, retryNo},
	core.CodeInvalidRequest:    {400, typeInvalidRequest, retryNo},
}

// infoFor returns the table row for code; an unknown code is a 500 so that a
// missing row can never leak as a success.
func infoFor(code core.Code) codeInfo {
	if info, ok := codeTable[code]; ok {
		return info
	}
	return codeTable[core.CodeInternalError]
}

// errorEnvelope is the spec's error body.
type errorEnvelope struct {
	Error    errorObject  `json:"error"`
	Conclave requestBlock `json:"conclave"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Param   *string `json:"param"`
}

type requestBlock struct {
	RequestID *string `json:"request_id"`
}

// writeError answers with err in the spec's envelope. Errors without a code
// are internal errors. The cause of any 5xx is logged, never sent.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := core.AsError(err)
	info := infoFor(e.Code)
	st := stateOf(r)
	if st != nil {
		st.code = string(e.Code)
	}
	if info.Status >= 500 && e.Err != nil && st != nil && st.logger != nil {
		st.logger.ErrorContext(r.Context(), "request failed", slog.String("request_id", st.id),
			slog.String("code", string(e.Code)), slog.String("error", e.Err.Error()))
	}
	body := errorEnvelope{Error: errorObject{Message: e.Message, Type: info.Type, Code: string(e.Code)}}
	if e.Param != "" {
		p := e.Param
		body.Error.Param = &p
	}
	if id := RequestID(r.Context()); id != "" {
		body.Conclave.RequestID = &id
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	} else if info.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, info.Status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshalJSON(v)
	if err != nil {
		// Only a programming error (a value JSON cannot encode) gets here.
		info := infoFor(core.CodeInternalError)
		status = info.Status
		body, _ = marshalJSON(errorEnvelope{Error: errorObject{Message: "The service failed to encode its answer. Retry with the same Idempotency-Key.",
			Type: info.Type, Code: string(core.CodeInternalError)}})
	}
	writeRawJSON(w, status, body)
}

// marshalJSON is how every response body is encoded: HTML left unescaped,
// a trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeRawJSON writes an already encoded JSON body, with its length, so
// the response is complete for the client as soon as it is flushed.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing useful to do
}

// decodeJSON reads a JSON object body into v, answering the errors every
// JSON endpoint shares: wrong media type, too large, not JSON, not an object.
// It returns false when it has answered.
func decodeJSON(w http.ResponseWriter, r *http.Request, maxBytes int64, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONMediaType(ct) {
		writeError(w, r, core.Errorf(core.CodeUnsupportedMediaType, "Send the body as application/json, not %s.", ct))
		return false
	}
	body := http.MaxBytesReader(w, r.Body, maxBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, r, core.Errorf(core.CodeRequestTooLarge, "The request body is over the %d-byte limit.", maxBytes))
			return false
		}
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field == "" {
			writeError(w, r, core.Errorf(core.CodeInvalidJSON, "The request body must be a JSON object."))
			return false
		}
		if typeErr != nil {
			// A field of the wrong type: the endpoint validates fields itself
			// and decodes them loosely, so this is a malformed body.
			writeError(w, r, core.Errorf(core.CodeInvalidJSON, "The request body field %q has the wrong type.", typeErr.Field).WithParam(typeErr.Field))
			return false
		}
		writeError(w, r, core.Errorf(core.CodeInvalidJSON, "The request body is not valid JSON: %v.", err))
		return false
	}
	if dec.More() {
		writeError(w, r, core.Errorf(core.CodeInvalidJSON, "The request body must hold exactly one JSON object."))
		return false
	}
	return true
}

func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
