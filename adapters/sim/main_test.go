package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testBundle is a running simulator and a client for it.
type testBundle struct {
	srv    *Server
	client *http.Client

	awsOnce sync.Once
	aws     aws.Credentials
}

// setup starts a simulator for one test; it is closed when the test ends.
func setup(t testing.TB, cfg Config) *testBundle {
	t.Helper()
	srv, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(tr.CloseIdleConnections)
	return &testBundle{srv: srv, client: &http.Client{Transport: tr}}
}

const testKey = "test-key"

// ask is one model call, in any format.
type ask struct {
	format    string // "openai", "anthropic", "gemini" or "bedrock"
	model     string
	system    string
	user      string
	jsonMode  bool
	maxTokens int
	// key is the API key to send: "" sends testKey, "-" sends none.
	key string
}

// answer is a provider response, read the way an adapter would.
type answer struct {
	status    int
	header    http.Header
	body      []byte
	valid     bool // the body is valid JSON
	text      string
	inTokens  int
	outTokens int
	finish    string // the provider's own finish or stop reason
	errType   string // OpenAI error.code, Anthropic error.type, Gemini error.status, Bedrock x-amzn-errortype
	errMsg    string
}

var formats = []string{"openai", "anthropic", "gemini", "bedrock"}

// request builds the HTTP request for a in a's wire format.
func (b *testBundle) request(t testing.TB, ctx context.Context, a ask) *http.Request {
	t.Helper()
	var (
		path string
		body any
	)
	switch a.format {
	case "openai":
		msgs := []map[string]any{}
		if a.system != "" {
			msgs = append(msgs, map[string]any{"role": "system", "content": a.system})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": a.user})
		req := map[string]any{"model": a.model, "messages": msgs}
		if a.maxTokens > 0 {
			req["max_tokens"] = a.maxTokens
		}
		if a.jsonMode {
			req["response_format"] = map[string]any{"type": "json_object"}
		}
		path, body = b.srv.Endpoint("openai")+"/chat/completions", req
	case "anthropic":
		req := map[string]any{"model": a.model, "max_tokens": 4096, "messages": []map[string]any{{"role": "user", "content": a.user}}}
		if a.maxTokens > 0 {
			req["max_tokens"] = a.maxTokens
		}
		if a.system != "" {
			req["system"] = a.system
		}
		path, body = b.srv.Endpoint("anthropic")+"/v1/messages", req
	case "gemini":
		req := map[string]any{"contents": []map[string]any{{"role": "user", "parts": []map[string]any{{"text": a.user}}}}}
		if a.system != "" {
			req["systemInstruction"] = map[string]any{"parts": []map[string]any{{"text": a.system}}}
		}
		gc := map[string]any{}
		if a.maxTokens > 0 {
			gc["maxOutputTokens"] = a.maxTokens
		}
		if a.jsonMode {
			gc["responseMimeType"] = "application/json"
		}
		if len(gc) > 0 {
			req["generationConfig"] = gc
		}
		path, body = b.srv.Endpoint("gemini")+"/v1beta/models/"+a.model+":generateContent", req
	case "bedrock":
		req := map[string]any{"messages": []map[string]any{{"role": "user", "content": []map[string]any{{"text": a.user}}}}}
		if a.system != "" {
			req["system"] = []map[string]any{{"text": a.system}}
		}
		if a.maxTokens > 0 {
			req["inferenceConfig"] = map[string]any{"maxTokens": a.maxTokens}
		}
		path, body = b.srv.Endpoint("bedrock")+"/model/"+url.PathEscape(a.model)+"/converse", req
	default:
		t.Fatalf("unknown format %q", a.format)
	}
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	key := a.key
	if key == "" {
		key = testKey
	}
	switch a.format {
	case "openai":
		if key != "-" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	case "anthropic":
		req.Header.Set("Anthropic-Version", "2023-06-01")
		if key != "-" {
			req.Header.Set("X-Api-Key", key)
		}
	case "gemini":
		if key != "-" {
			req.Header.Set("X-Goog-Api-Key", key)
		}
	case "bedrock":
		if key != "-" {
			b.sign(t, req, raw, b.awsCredentials(t))
		}
	}
	return req
}

// do sends a and reads the answer.
func (b *testBundle) do(t testing.TB, a ask) answer {
	t.Helper()
	res, err := b.client.Do(b.request(t, t.Context(), a))
	require.NoError(t, err)
	return readAnswer(t, a.format, res)
}

func readAnswer(t testing.TB, format string, res *http.Response) answer {
	t.Helper()
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := answer{status: res.StatusCode, header: res.Header, body: raw, valid: json.Valid(raw)}
	if !out.valid {
		return out
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Code    any    `json:"code"`
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"error"`
			Message string `json:"message"`
		}
		require.NoError(t, json.Unmarshal(raw, &e))
		switch format {
		case "openai":
			out.errType, _ = e.Error.Code.(string)
			out.errMsg = e.Error.Message
		case "anthropic":
			require.Equal(t, "error", e.Type)
			out.errType, out.errMsg = e.Error.Type, e.Error.Message
		case "gemini":
			out.errType, out.errMsg = e.Error.Status, e.Error.Message
		case "bedrock":
			out.errType, out.errMsg = res.Header.Get("X-Amzn-Errortype"), e.Message
		}
		return out
	}
	switch format {
	case "openai":
		var r struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(raw, &r))
		require.Equal(t, "chat.completion", r.Object)
		require.Len(t, r.Choices, 1)
		require.Equal(t, "assistant", r.Choices[0].Message.Role)
		require.Equal(t, r.Usage.PromptTokens+r.Usage.CompletionTokens, r.Usage.TotalTokens)
		out.text, out.finish = r.Choices[0].Message.Content, r.Choices[0].FinishReason
		out.inTokens, out.outTokens = r.Usage.PromptTokens, r.Usage.CompletionTokens
	case "anthropic":
		var r struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StopReason string `json:"stop_reason"`
			Usage      struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(raw, &r))
		require.Equal(t, "message", r.Type)
		require.Equal(t, "assistant", r.Role)
		for _, c := range r.Content {
			require.Equal(t, "text", c.Type)
			out.text += c.Text
		}
		out.finish, out.inTokens, out.outTokens = r.StopReason, r.Usage.InputTokens, r.Usage.OutputTokens
	case "gemini":
		var r struct {
			Candidates []struct {
				Content *struct {
					Role  string `json:"role"`
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"content"`
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
			UsageMetadata struct {
				PromptTokenCount     int `json:"promptTokenCount"`
				CandidatesTokenCount int `json:"candidatesTokenCount"`
				TotalTokenCount      int `json:"totalTokenCount"`
			} `json:"usageMetadata"`
		}
		require.NoError(t, json.Unmarshal(raw, &r))
		require.Len(t, r.Candidates, 1)
		if c := r.Candidates[0].Content; c != nil {
			require.Equal(t, "model", c.Role)
			for _, p := range c.Parts {
				out.text += p.Text
			}
		}
		u := r.UsageMetadata
		require.Equal(t, u.PromptTokenCount+u.CandidatesTokenCount, u.TotalTokenCount)
		out.finish, out.inTokens, out.outTokens = r.Candidates[0].FinishReason, u.PromptTokenCount, u.CandidatesTokenCount
	case "bedrock":
		var r struct {
			Output struct {
				Message struct {
					Role    string `json:"role"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"message"`
			} `json:"output"`
			StopReason string `json:"stopReason"`
			Usage      struct {
				InputTokens  int `json:"inputTokens"`
				OutputTokens int `json:"outputTokens"`
				TotalTokens  int `json:"totalTokens"`
			} `json:"usage"`
			Metrics struct {
				LatencyMs *int64 `json:"latencyMs"`
			} `json:"metrics"`
		}
		require.NoError(t, json.Unmarshal(raw, &r))
		require.Equal(t, "assistant", r.Output.Message.Role)
		require.NotNil(t, r.Metrics.LatencyMs)
		for _, c := range r.Output.Message.Content {
			out.text += c.Text
		}
		require.Equal(t, r.Usage.InputTokens+r.Usage.OutputTokens, r.Usage.TotalTokens)
		out.finish, out.inTokens, out.outTokens = r.StopReason, r.Usage.InputTokens, r.Usage.OutputTokens
	}
	return out
}

// awsCredentials assumes a role through the simulator's STS, once per bundle.
func (b *testBundle) awsCredentials(t testing.TB) aws.Credentials {
	t.Helper()
	b.awsOnce.Do(func() { b.aws = b.assumeRole(t, "arn:aws:iam::123456789012:role/conclave-seat", "") })
	require.NotEmpty(t, b.aws.AccessKeyID, "assuming the test role failed")
	return b.aws
}

// assumeRole posts the AssumeRole form as an AWS SDK does and reads the XML.
func (b *testBundle) assumeRole(t testing.TB, roleARN, externalID string) aws.Credentials {
	t.Helper()
	form := url.Values{
		"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {roleARN},
		"RoleSessionName": {"conclave-test"}, "DurationSeconds": {"900"},
	}
	if externalID != "" {
		form.Set("ExternalId", externalID)
	}
	res, err := b.client.PostForm(b.srv.Endpoint("sts"), form)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", raw)
	var r struct {
		Result struct {
			Credentials struct {
				AccessKeyID     string `xml:"AccessKeyId"`
				SecretAccessKey string `xml:"SecretAccessKey"`
				SessionToken    string `xml:"SessionToken"`
				Expiration      string `xml:"Expiration"`
			} `xml:"Credentials"`
		} `xml:"AssumeRoleResult"`
	}
	require.NoError(t, xml.Unmarshal(raw, &r))
	c := r.Result.Credentials
	expires, err := time.Parse(time.RFC3339, c.Expiration)
	require.NoError(t, err)
	return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken, CanExpire: true, Expires: expires}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sign signs a Bedrock request the way the egress layer does.
func (b *testBundle) sign(t testing.TB, req *http.Request, body []byte, creds aws.Credentials) {
	t.Helper()
	// A fresh signer each time: a signer caches the key it derives per
	// access key id, and the tests sign with deliberately wrong secrets.
	require.NoError(t, v4.NewSigner().SignHTTP(req.Context(), creds, req, sha256Hex(body), "bedrock", "us-east-1", time.Now()))
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	// Generous: this waits for a state, it does not measure speed, and a
	// loaded 2-core CI machine can take a while to open thousands of calls.
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
