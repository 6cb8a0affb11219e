package callstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/internal/tokens"
)

// slowQuestion makes every model call of its deliberation take 0.8 s (40 s
// of simulated time at the bundle's time scale of 0.02): the deliberation
// runs for several seconds.
const slowQuestion = "Should we adopt trunk-based development? Compare the risks and recommend a strategy. [[sim: delay=40s]]"

// service is a call service of its own on the bundle's store and engine,
// configured by cfg.
func (tb *testBundle) service(t *testing.T, cfg calls.Config) *calls.Service {
	t.Helper()
	svc, err := calls.New(cfg, calls.Deps{
		Access: tb.access, Admission: tb.store, Receipts: tb.store, Outcomes: tb.store,
		Catalog: tb.catalog, Deliberator: tb.engine, TokensOver: tokens.Over,
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(context.Background()))
	t.Cleanup(svc.Stop)
	return svc
}

// principal authenticates a new key of the bundle's organisation.
func (tb *testBundle) principal(t *testing.T, p *core.CreateKeyParams) *access.Principal {
	t.Helper()
	ctx := context.Background()
	secret, hash := core.NewKeySecret(false)
	p.OrgID, p.Hash, p.Hint = tb.org.ID, hash, core.KeyHint(secret)
	_, err := tb.store.CreateKey(ctx, p)
	require.NoError(t, err)
	pr, err := tb.access.Authenticate(ctx, secret)
	require.NoError(t, err)
	return pr
}

func chatParams(question, idemKey string) *calls.ChatParams {
	return &calls.ChatParams{Model: "conclave-standard", Tier: core.DefaultTier, IdempotencyKey: idemKey,
		Messages: []core.Message{{Role: core.RoleUser, Content: question}}}
}

type chatOutcome struct {
	res *calls.ChatResult
	err error
}

// start runs a chat in the background and returns once it is running.
func start(t *testing.T, svc *calls.Service, p *access.Principal, req *calls.ChatParams) <-chan chatOutcome {
	t.Helper()
	// A call that has just answered may still count as running for a
	// moment (it settles after its answer): wait until it is gone, so that
	// the count below is this call's.
	require.Eventually(t, func() bool { return svc.Running() == 0 }, 10*time.Second, 5*time.Millisecond)
	out := make(chan chatOutcome, 1)
	go func() {
		res, err := svc.Chat(context.Background(), p, calls.Call{RequestID: core.NewID("req")}, req)
		out <- chatOutcome{res, err}
	}()
	require.Eventually(t, func() bool { return svc.Running() == 1 }, 10*time.Second, 5*time.Millisecond)
	return out
}

func (tb *testBundle) balance(t *testing.T) *core.Balance {
	t.Helper()
	bal, err := tb.store.GetBalance(context.Background(), tb.org.ID)
	require.NoError(t, err)
	return bal
}

// A repeat that finds its call running in this process waits for it and
// gets its replay, without a 409 and without the caller's retries; the
// call is billed once. A repeat whose caller leaves while it waits stops
// waiting and gets the context's error, not a refusal, and the call goes
// on.
func TestRepeatWaitsForItsRunningCall(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	svc := tb.service(t, calls.Config{}) // the default wait, 20 s
	p := tb.principal(t, &core.CreateKeyParams{})
	first := start(t, svc, p, chatParams(slowQuestion, "wait-1"))

	impatient, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := svc.Chat(impatient, p, calls.Call{RequestID: core.NewID("req")}, chatParams(slowQuestion, "wait-1"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var refusal *core.Error
	require.False(t, errors.As(err, &refusal), "not a refusal: %v", err)
	require.Equal(t, 1, svc.Running(), "the call goes on")

	res, err := svc.Chat(context.Background(), p, calls.Call{RequestID: core.NewID("req")}, chatParams("Another body entirely.", "wait-1"))
	require.NoError(t, err)
	require.NotNil(t, res.Replay, "the repeat waited for the call and replays it")
	o := <-first
	require.NoError(t, o.err)
	require.Equal(t, o.res.Completion.Panel.RequestID, res.Replay.RequestID)
	require.Equal(t, o.res.Completion.Answer, res.Replay.Completion.Answer)

	billed := core.Micros(o.res.Completion.Panel.BilledUSD)
	require.Positive(t, billed)
	bal := tb.balance(t)
	require.Equal(t, core.TrialCredit-billed, bal.Balance, "billed once")
	require.Zero(t, bal.Held)
}

// A repeat that outwaits RepeatWait gets 409 request_in_progress. With no
// finished deliberation of the mode on record, its Retry-After comes from
// the mode's configuration (two rounds of its 20 s straggler deadline, less
// what the call has run, plus a second), not from the 5 s fallback, which
// the official clients' two retries would spend long before the answer.
func TestRepeatPastTheWaitIsInProgress(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	svc := tb.service(t, calls.Config{RepeatWait: 50 * time.Millisecond})
	p := tb.principal(t, &core.CreateKeyParams{})
	first := start(t, svc, p, chatParams(slowQuestion, "past-1"))

	_, err := svc.Chat(context.Background(), p, calls.Call{RequestID: core.NewID("req")}, chatParams(slowQuestion, "past-1"))
	e := core.AsError(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, core.CodeRequestInProgress, e.Code)
	mode, ok := tb.catalog.Resolve("conclave-standard")
	require.True(t, ok)
	fromConfig := time.Duration(mode.Deliberation.MaxRounds)*mode.Deliberation.StragglerDeadline + time.Second
	require.LessOrEqual(t, e.RetryAfter, fromConfig)
	require.Greater(t, e.RetryAfter, fromConfig/2, "the mode's configuration, less what the call has run")

	o := <-first
	require.NoError(t, o.err)
	// Now the mode has a median: the next repeat of a running call is told
	// that instead.
	second := start(t, svc, p, chatParams(slowQuestion+" Again.", "past-2"))
	_, err = svc.Chat(context.Background(), p, calls.Call{RequestID: core.NewID("req")}, chatParams(slowQuestion, "past-2"))
	e = core.AsError(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, core.CodeRequestInProgress, e.Code)
	require.Less(t, e.RetryAfter, fromConfig/2, "the median of a deliberation of a few seconds")
	require.NoError(t, (<-second).err)
}

// A repeat whose call fails unbilled while it waits runs the call itself,
// as a client's retry would; the key's rate is spent once for it (a key of
// two requests a minute makes both). Nothing is billed.
func TestRepeatRunsWhenItsCallFailedWhileItWaited(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	svc := tb.service(t, calls.Config{})
	p := tb.principal(t, &core.CreateKeyParams{RPM: 2})
	failing := chatParams("Should we migrate the ledger? [[sim: error=bad_request delay=40s]]", "fail-1")
	first := start(t, svc, p, failing)

	res, err := svc.Chat(context.Background(), p, calls.Call{RequestID: core.NewID("req")}, failing)
	require.Nil(t, res)
	require.Equal(t, core.CodeModeUnavailable, core.AsError(err).Code, "the repeat ran, into the same failure: %v", err)
	require.Equal(t, core.CodeModeUnavailable, core.AsError((<-first).err).Code)
	bal := tb.balance(t)
	require.Equal(t, core.TrialCredit, bal.Balance, "nothing billed")
	require.Zero(t, bal.Held)
}
