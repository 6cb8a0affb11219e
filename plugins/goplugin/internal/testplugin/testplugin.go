// Package testplugin provides the adapter and protocol that the go-plugin
// carrier's tests serve from real plugin processes (see
// plugins/goplugin/testdata) and call natively for comparison.
//
// Besides a plain translation, the adapter's BuildRequest answers a few
// reserved model names that let a test look inside the plugin process:
// "crash" exits the process, "panic" panics, "block" waits for its context,
// "deadline" reports the deadline it received, "env" reports its
// environment, "pid" its process id, and "print" writes to stdout and
// stderr. Adapter and Protocol are safe for
// concurrent use.
package testplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Reserved models of the adapter's BuildRequest.
const (
	ModelCrash    = "crash"    // exits the process with status 3 mid-call
	ModelPanic    = "panic"    // panics mid-call
	ModelBlock    = "block"    // blocks until the call's context is done
	ModelDeadline = "deadline" // header "deadline-ms": time left on the call's context, or "none"
	ModelEnv      = "env"      // body: the process environment as a JSON array
	ModelPID      = "pid"      // headers "pid" and "blocked" (calls now waiting in ModelBlock)
	ModelPrint    = "print"    // prints "to stdout" to stdout and "to stderr" to stderr
)

// Adapter is a small provider adapter: a chat request in, a JSON answer out.
type Adapter struct {
	blocked atomic.Int64
}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

// Describe implements core.Adapter.
func (*Adapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: "testplugin", Version: "1.0.0", Auth: core.AuthBearer}, nil
}

type chatRequest struct {
	Model       string         `json:"model"`
	Messages    []core.Message `json:"messages"`
	MaxTokens   int            `json:"max_tokens,omitempty"`
	Temperature *float64       `json:"temperature,omitempty"`
	JSON        bool           `json:"json,omitempty"`
}

// BuildRequest implements core.Adapter.
func (a *Adapter) BuildRequest(ctx context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	switch req.Model {
	case ModelCrash:
		os.Exit(3)
	case ModelPanic:
		panic("testplugin: panic requested")
	case ModelBlock:
		a.blocked.Add(1)
		defer a.blocked.Add(-1)
		<-ctx.Done()
		return nil, ctx.Err()
	case ModelDeadline:
		left := "none"
		if d, ok := ctx.Deadline(); ok {
			left = strconv.FormatInt(time.Until(d).Milliseconds(), 10)
		}
		return &core.HTTPRequest{Method: "GET", Path: "/deadline", Header: map[string]string{"deadline-ms": left}}, nil
	case ModelEnv:
		b, err := json.Marshal(os.Environ())
		return &core.HTTPRequest{Method: "GET", Path: "/env", Body: b}, err
	case ModelPID:
		return &core.HTTPRequest{Method: "GET", Path: "/pid", Header: map[string]string{
			"pid":     strconv.Itoa(os.Getpid()),
			"blocked": strconv.FormatInt(a.blocked.Load(), 10),
		}}, nil
	case ModelPrint:
		fmt.Fprintln(os.Stdout, "to stdout")
		fmt.Fprintln(os.Stderr, "to stderr")
		return &core.HTTPRequest{Method: "GET", Path: "/print"}, nil
	case "":
		return nil, errors.New("testplugin: model is required")
	}
	msgs := req.Messages
	if req.System != "" {
		msgs = append([]core.Message{{Role: core.RoleSystem, Content: req.System}}, msgs...)
	}
	body, err := json.Marshal(chatRequest{Model: req.Model, Messages: msgs, MaxTokens: req.MaxTokens, Temperature: req.Temperature, JSON: req.JSONOutput})
	if err != nil {
		return nil, err
	}
	return &core.HTTPRequest{
		Method: "POST",
		Path:   "/v1/chat",
		Header: map[string]string{"content-type": "application/json"},
		Body:   body,
	}, nil
}

type chatResponse struct {
	Text   string `json:"text"`
	In     int    `json:"in"`
	Out    int    `json:"out"`
	Finish string `json:"finish"`
	Error  string `json:"error"`
}

// ParseResponse implements core.Adapter.
func (*Adapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	var r chatResponse
	if err := json.Unmarshal(res.Body, &r); err != nil {
		return nil, fmt.Errorf("testplugin: decoding the response: %w", err)
	}
	switch {
	case res.Status == 429:
		return &core.SeatAnswer{Error: &core.ProviderError{Class: core.ErrorRateLimited, Message: r.Error, Status: res.Status}}, nil
	case res.Status >= 400:
		return &core.SeatAnswer{Error: &core.ProviderError{Class: core.ErrorBadRequest, Message: r.Error, Status: res.Status}}, nil
	}
	return &core.SeatAnswer{Text: r.Text, InputTokens: r.In, OutputTokens: r.Out, Finish: r.Finish}, nil
}

// Protocol is a small judging protocol: one prompt per answer, and the score
// of an answer is the number its judge replied, out of 10.
type Protocol struct{}

// Describe implements core.Protocol.
func (Protocol) Describe(context.Context) (*core.ProtocolInfo, error) {
	return &core.ProtocolInfo{Name: "testprotocol", Version: "1.0.0"}, nil
}

// Plan implements core.Protocol.
func (Protocol) Plan(_ context.Context, task *core.JudgeTask) (*core.JudgePlan, error) {
	plan := &core.JudgePlan{Prompts: []core.JudgePrompt{}}
	for _, a := range task.Answers {
		plan.Prompts = append(plan.Prompts, core.JudgePrompt{
			ID:     a.ID,
			System: "Rate the answer from 0 to 10. Reply with the number only.",
			User:   "Question: " + task.Question + "\n\nAnswer: " + a.Text,
		})
	}
	return plan, nil
}

// Score implements core.Protocol.
func (Protocol) Score(_ context.Context, in *core.JudgeVerdicts) (*core.JudgeScores, error) {
	s := &core.JudgeScores{Scores: map[string]float64{}}
	best := -1.0
	for _, v := range in.Verdicts {
		n, err := strconv.Atoi(v.Text)
		if err != nil || n < 0 || n > 10 {
			s.Unreadable++
			continue
		}
		score := float64(n) / 10
		s.Scores[v.PromptID] = score
		if score > best {
			best, s.Best = score, v.PromptID
		}
	}
	return s, nil
}

var (
	_ core.Adapter  = (*Adapter)(nil)
	_ core.Protocol = Protocol{}
)
