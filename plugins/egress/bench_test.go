package egress_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
)

// BenchmarkCall compares one seat call through egress (describe cached,
// build, checks, credential, send, capped read, scrub, parse) with the same
// request sent straight through an http.Client, against one loopback
// server, so the egress overhead is the difference.
func BenchmarkCall(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-1","choices":[{"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":2}}`)
	p := newProvider(b, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	// The recorder would grow without bound over b.N calls; keep it empty.
	forget := func() { p.mu.Lock(); p.reqs = p.reqs[:0]; p.mu.Unlock() }

	eng := p.engine("bench/engine")
	adapter := &benchAdapter{}
	req, err := adapter.BuildRequest(context.Background(), seatRequest())
	require.NoError(b, err)

	b.Run("direct", func(b *testing.B) {
		client := &http.Client{}
		defer client.CloseIdleConnections()
		url := p.URL + "/api" + req.Path
		b.ReportAllocs()
		for b.Loop() {
			r, err := http.NewRequest(req.Method, url, bytes.NewReader(req.Body))
			if err != nil {
				b.Fatal(err)
			}
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer "+secret)
			res, err := client.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK {
				b.Fatal(err, res.StatusCode)
			}
			if _, err := adapter.ParseResponse(context.Background(), &core.HTTPResponse{Status: res.StatusCode, Body: body}); err != nil {
				b.Fatal(err)
			}
			forget()
		}
	})

	b.Run("egress", func(b *testing.B) {
		e, err := egress.New(egress.Config{}, static, []*core.Engine{eng})
		require.NoError(b, err)
		defer e.CloseIdleConnections()
		call := &core.EgressCall{Engine: eng, Adapter: adapter, Request: seatRequest()}
		b.ReportAllocs()
		for b.Loop() {
			ans, err := e.Call(context.Background(), call)
			if err != nil || ans.Error != nil {
				b.Fatal(err, ans)
			}
			forget()
		}
	})
}

// benchAdapter is a minimal stateless adapter: it records nothing, so the
// benchmark measures egress rather than the test recorder.
type benchAdapter struct{}

func (benchAdapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: "bench", Version: "1", Auth: core.AuthBearer}, nil
}

func (benchAdapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	return &core.HTTPRequest{
		Method: http.MethodPost, Path: "/v1/chat/completions",
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   []byte(`{"model":"` + req.Model + `","messages":[{"role":"user","content":"What is the capital of France?"}]}`),
	}, nil
}

func (benchAdapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res.Status != http.StatusOK {
		return &core.SeatAnswer{Error: &core.ProviderError{Class: core.ErrorMalformed, Message: "status"}}, nil
	}
	return &core.SeatAnswer{Text: string(res.Body), Finish: core.FinishStop}, nil
}
