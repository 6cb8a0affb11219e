package reply_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/core"
)

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]core.ErrorClass{
		429: core.ErrorRateLimited, 408: core.ErrorTimeout, 504: core.ErrorTimeout, 401: core.ErrorAuthRefused,
		403: core.ErrorAuthRefused, 413: core.ErrorContextTooLong, 500: core.ErrorOverloaded, 529: core.ErrorOverloaded,
		400: core.ErrorBadRequest, 404: core.ErrorBadRequest, 200: core.ErrorMalformed, 302: core.ErrorMalformed,
	} {
		require.Equal(t, want, reply.ClassifyStatus(status), "status %d", status)
	}
}

func TestShortenKeepsOneValidLine(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a b c", reply.Shorten("  a\n b\t c "))
	long := reply.Shorten(strings.Repeat("é", 300))
	require.True(t, utf8.ValidString(long))
	require.LessOrEqual(t, len(long), reply.MaxMessage+len("…"))
	require.True(t, strings.HasSuffix(long, "…"))
	require.Equal(t, "\uFFFD", reply.Shorten("\xff"))
}

func TestJSONProblemNeverQuotesTheBody(t *testing.T) {
	t.Parallel()
	var v struct{ N int }
	require.Equal(t, "invalid JSON", reply.JSONProblem(json.Unmarshal([]byte(`{secret`), &v)))
	require.Equal(t, "unexpected type at N", reply.JSONProblem(json.Unmarshal([]byte(`{"N":"secret"}`), &v)))
	require.Equal(t, core.ErrorMalformed, reply.Malformed(200, "x").Error.Class)
}

func TestDecodeProblemsReadAsEncodingJSONs(t *testing.T) {
	t.Parallel()
	var v struct {
		N     int
		Inner struct{ M []int }
	}
	require.Equal(t, "invalid JSON", reply.JSONProblem(reply.Decode([]byte(`{secret`), &v)))
	require.Equal(t, "invalid JSON", reply.JSONProblem(reply.Decode([]byte(`{"N":1`), &v)))
	require.Equal(t, "unexpected type at N", reply.JSONProblem(reply.Decode([]byte(`{"N":"secret"}`), &v)))
	require.Equal(t, "unexpected type at Inner.M", reply.JSONProblem(reply.Decode([]byte(`{"Inner":{"M":"secret"}}`), &v)))
	require.Equal(t, "unexpected shape", reply.JSONProblem(reply.Decode([]byte(`{}`), nil)))
}

// TestDecodeIsEncodingJSON decodes the shapes provider answers take, and
// the corners where JSON decoders differ, with Decode and with
// encoding/json, and wants the same values and the same success.
func TestDecodeIsEncodingJSON(t *testing.T) {
	t.Parallel()
	type answer struct {
		Choices []struct {
			Message *struct {
				Content any     `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
		Text  string          `json:"text"`
	}
	for _, body := range []string{
		`{"choices":[{"message":{"content":"Yes.\nNo.","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":12}}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"thinking"}]}}]}`,
		`{"CHOICES":[{"Message":{"Content":"case differs"}}],"Usage":{"Prompt_Tokens":3}}`,
		`{"text":"first","text":"last wins"}`,
		"{\"text\":\"invalid \xff UTF-8\"}",
		`{"text":"escapes \u00e9 \ud83d\ude00 \"q\""}`,
		`{"error":{"message":"overloaded","code":529},"choices":[]}`,
		`{"error":null}`,
		`{"usage":{"prompt_tokens":1e3}}`,
		`{"usage":{"prompt_tokens":12.5}}`,
		`{"choices":{}}`,
		`{"unknown":{"deep":[1,2,{"x":null}]},"text":"kept"}`,
		`{"text":"trailing"} x`,
		`[]`,
		``,
	} {
		var want, got answer
		wantErr := json.Unmarshal([]byte(body), &want)
		gotErr := reply.Decode([]byte(body), &got)
		require.Equal(t, wantErr == nil, gotErr == nil, "body %q: encoding/json %v, Decode %v", body, wantErr, gotErr)
		if wantErr == nil {
			require.Equal(t, want, got, "body %q", body)
		} else {
			require.Equal(t, reply.JSONProblem(wantErr), reply.JSONProblem(gotErr), "body %q", body)
		}
	}
}
