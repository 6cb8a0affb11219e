package execute

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// An engine is down after DownAfter failed calls in a row, the last within
// DownFor; one answer, or DownFor without a call, puts it back.
func TestHealthCountsFailuresInARow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	h := NewHealth(func() time.Time { return now })
	require.True(t, h.Working("sim/nova-pro"), "never called")
	for range DownAfter - 1 {
		h.Record("sim/nova-pro", false)
	}
	require.True(t, h.Working("sim/nova-pro"), "one failure short")
	h.Record("sim/nova-pro", true)
	for range DownAfter - 1 {
		h.Record("sim/nova-pro", false)
	}
	require.True(t, h.Working("sim/nova-pro"), "an answer starts the count again")
	h.Record("sim/nova-pro", false)
	require.False(t, h.Working("sim/nova-pro"), "DownAfter in a row")
	require.True(t, h.Working("sim/mistral-large"), "engines are counted apart")

	now = now.Add(DownFor - time.Second)
	require.False(t, h.Working("sim/nova-pro"))
	now = now.Add(time.Second)
	require.True(t, h.Working("sim/nova-pro"), "DownFor without a call")
	h.Record("sim/nova-pro", false)
	require.False(t, h.Working("sim/nova-pro"), "one more failure, and it is down again")
	h.Record("sim/nova-pro", true)
	require.True(t, h.Working("sim/nova-pro"))
}

// failingJudge is a judge engine whose provider refuses every call.
type failingJudge struct{}

func (failingJudge) Call(context.Context, string, string, *core.SeatRequest) (*core.SeatAnswer, error) {
	return &core.SeatAnswer{Error: &core.ProviderError{Class: core.ErrorOverloaded, Message: "down"}}, nil
}

// A panel records each judge call in its Health: failures in a row put the
// judge's engine down, an answer puts it back.
func TestPanelRecordsItsJudgesHealth(t *testing.T) {
	t.Parallel()
	items, err := bank.Draw(bank.Version, 1, bank.Counts{Light: 1})
	require.NoError(t, err)
	h := NewHealth(nil)
	p := &Panel{Catalog: testCatalog(t), Caller: failingJudge{}, Health: h,
		Protocols: map[runs.Protocol]core.Protocol{runs.ProtocolPairwise: firstWins{}},
		Engines:   map[runs.Judge]string{"nova_pro": "sim/nova-pro"}}
	req := &runs.JudgeRequest{
		Batch:    &runs.Batch{ID: "b1", Plan: &runs.Plan{Protocol: runs.ProtocolPairwise}},
		Question: &runs.Question{Index: 0, QuestionID: items[0].ID},
		Judge:    "nova_pro", Repeat: 1, Order: []runs.Side{runs.SideMode, runs.SideBaseline},
		Answers: map[runs.Side]*runs.Answer{runs.SideMode: {Text: "4"}, runs.SideBaseline: {Text: "5"}},
	}
	for range DownAfter {
		require.True(t, h.Working("sim/nova-pro"))
		_, err := p.Judge(context.Background(), req)
		require.Error(t, err)
	}
	require.False(t, h.Working("sim/nova-pro"), "down after DownAfter failed judgments")

	p.Caller = &recordingJudge{}
	_, err = p.Judge(context.Background(), req)
	require.NoError(t, err)
	require.True(t, h.Working("sim/nova-pro"), "an answer puts it back")
}
