package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/nodetest"
)

// The deliberations of the Node tests, at the chat bundle's time scale of
// 0.02: every model call of twelveSeconds takes 2 s (100 s simulated) and
// its deliberation about 12 s; every call of sixSeconds 1 s, about 6 s in
// all — past a 3-second client timeout.
const (
	twelveSeconds = hardQuestion + " [[sim: delay=100s]]"
	sixSeconds    = hardQuestion + " Keep it short. [[sim: delay=50s]]"
)

// nodeEnv is what every Node test file of compat/openai reads.
func nodeEnv(cb *chatBundle, more map[string]string) map[string]string {
	env := map[string]string{"CONCLAVE_BASE_URL": cb.srv.URL + "/v1", "CONCLAVE_API_KEY": cb.key}
	for k, v := range more {
		env[k] = v
	}
	return env
}

// The official OpenAI Node client (compat/openai/chat.test.mjs): a chat
// completion with only the base URL changed and its panel, every refusal as
// its APIError with our code, and its retries after a 500 replaying the
// call billed. Afterwards the store shows each call that ran charged once.
func TestNodeOpenAIClient(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	cb := setupChatWith(t, func(p *parts) {
		p.limits.RepeatWait = -1 // the 409 of a repeat is answered at once
		p.settlement = unconfirmedKeys{p.store, "unconfirmed-"}
	})
	env := nodeEnv(cb, map[string]string{
		"CONCLAVE_RICH_KEY":    cb.newKey(t, &core.CreateKeyParams{Ceiling: 50 * core.MicrosPerUSD}),
		"CONCLAVE_OTHER_KEY":   cb.newKey(t, &core.CreateKeyParams{}),
		"CONCLAVE_LIMITED_KEY": cb.newKey(t, &core.CreateKeyParams{RPM: 1}),
		// A call still deliberating while the file's first test runs.
		"CONCLAVE_BUSY_IDEMPOTENCY_KEY": "node-busy-1",
	})
	busy := cb.startBusy(t, twelveSeconds, "node-busy-1")

	nodetest.Test(t, 2*time.Minute, env, "openai/chat.test.mjs")

	r := <-busy
	require.Equal(t, 200, r.status, r.raw)
	// The busy call, the completion, and the call whose bill was not
	// confirmed: charged once although the client sent it twice.
	cb.requireChargedOnce(t, 3)
}

// The official OpenAI Node client with its defaults
// (compat/openai/retries.test.mjs): a duplicate sent during a 12-second
// deliberation ends in the replay, and a client with a 3-second timeout
// gets the stored answer of the call that outlived it. The server runs
// with Conclave's defaults: the mode has no finished deliberation yet.
func TestNodeOpenAIClientRetries(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	cb := setupChat(t)
	first := cb.startBusy(t, twelveSeconds, "node-running-1")

	nodetest.Test(t, 3*time.Minute, nodeEnv(cb, map[string]string{
		"CONCLAVE_RUNNING_IDEMPOTENCY_KEY": "node-running-1",
		"CONCLAVE_SLOW_QUESTION":           sixSeconds,
	}), "openai/retries.test.mjs")

	r := <-first
	require.Equal(t, 200, r.status, r.raw)
	panel := r.body["panel"].(map[string]any)
	t.Logf("the 12-second deliberation took %v ms", panel["latency_ms"])
	var holder string
	require.NoError(t, cb.store.Pool().QueryRow(context.Background(),
		"SELECT request_id FROM idempotency_keys WHERE org_id = $1 AND key = 'node-running-1'", cb.org.ID).Scan(&holder))
	require.Equal(t, panel["request_id"], holder, "the duplicate ran nothing: the key names the first call")
	// The 12-second call and the one whose caller timed out: one charge
	// each, whatever the clients' attempts.
	cb.requireChargedOnce(t, 2)
}
