package api

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// A 429 always tells the caller when to come back: the error's own
// RetryAfter rounded up to whole seconds, or one second.
func TestRateLimitErrorsCarryRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *core.Error
		want string
	}{
		{&core.Error{Code: core.CodeRateLimitExceeded, Message: "slow down", RetryAfter: 1500 * time.Millisecond}, "2"},
		{&core.Error{Code: core.CodeConcurrencyLimitExceeded, Message: "too many"}, "1"},
		{&core.Error{Code: core.CodeTestLaunchLimitExceeded, Message: "daily", RetryAfter: time.Hour}, "3600"},
	} {
		w := httptest.NewRecorder()
		writeError(w, httptest.NewRequest("POST", "/v1/estimate", nil), tc.err)
		require.Equal(t, 429, w.Code)
		require.Equal(t, tc.want, w.Header().Get("Retry-After"))
		require.Contains(t, w.Body.String(), `"type":"rate_limit_error"`)
	}
	w := httptest.NewRecorder()
	writeError(w, httptest.NewRequest("GET", "/", nil), core.Errorf(core.CodeModelNotFound, "no"))
	require.Empty(t, w.Header().Get("Retry-After"), "only throttling answers carry Retry-After")
}

// A value JSON cannot encode is answered as a 500 internal_error in the
// usual envelope, with its length, never as a truncated 200.
func TestWriteJSONOfAnUnencodableValueIsAnInternalError(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, map[string]any{"answer": make(chan int)})
	require.Equal(t, 500, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Equal(t, strconv.Itoa(rec.Body.Len()), rec.Header().Get("Content-Length"))
	require.JSONEq(t, `{"error":{"message":"The service failed to encode its answer. Retry with the same Idempotency-Key.",
		"type":"api_error","code":"internal_error","param":null},"conclave":{"request_id":null}}`, rec.Body.String())
}

// What an error carries beside its object is written into the conclave
// block after the request id, by name, with HTML left unescaped; it never
// replaces the request id.
func TestErrorDetailIsWrittenInTheConclaveBlock(t *testing.T) {
	t.Parallel()
	e := core.Errorf(core.CodeModeInvalid, "The spec breaks 1 rule.").
		WithDetail("refusals", []map[string]string{{"code": "name_bad_chars", "message": "Use - ' & . , only."}}).
		WithDetail("request_id", "req_forged").
		WithDetail("floor_usd", 0.01)
	w := httptest.NewRecorder()
	writeError(w, httptest.NewRequest("POST", "/v1/modes", nil), e)
	require.Equal(t, 422, w.Code)
	require.JSONEq(t, `{"error": {"message": "The spec breaks 1 rule.", "type": "invalid_request_error", "code": "mode_invalid", "param": null},
		"conclave": {"request_id": null, "floor_usd": 0.01, "refusals": [{"code": "name_bad_chars", "message": "Use - ' & . , only."}]}}`, w.Body.String())
	require.Contains(t, w.Body.String(), `"conclave":{"request_id":null,"floor_usd":0.01,"refusals":[{"code":"name_bad_chars","message":"Use - ' & . , only."}]}`)
}
