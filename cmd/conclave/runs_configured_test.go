package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/browsertest"
	"github.com/conclavehq/conclave/internal/config"
)

// apiKey is a new API key of the organisation, with every scope.
func (og *oauthGateway) apiKey(t *testing.T) string {
	t.Helper()
	secret, hash := core.NewKeySecret(false)
	_, err := og.g.db.store.CreateKey(context.Background(), &core.CreateKeyParams{OrgID: og.org.ID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)
	return secret
}

// testRun launches the test run body asks with key and waits for it to
// end: the batch as the last poll answered it.
func (og *oauthGateway) testRun(t *testing.T, key, body string) map[string]any {
	t.Helper()
	acc := jsonOf(t, "POST", og.origin+"/v1/tests", key, body, http.StatusOK)
	id, _ := acc["batch_id"].(string)
	require.NotEmpty(t, id, "%v", acc)
	end := time.Now().Add(90 * time.Second)
	for {
		b := jsonOf(t, "GET", og.origin+"/v1/tests?batch_id="+id, key, "", http.StatusOK)["batch"].(map[string]any)
		if s := b["status"]; s == "complete" || s == "failed" {
			return b
		}
		require.True(t, time.Now().Before(end), "the test run did not finish: %v", b)
		time.Sleep(250 * time.Millisecond)
	}
}

// A key billing its organisation's balance tests a configured mode it can
// call (conclave-standard): the run is charged its quote, answered by the
// configured mode itself (version 0, from the catalogue) and by its
// baseline, judged, and completes. Certifying it still needs a mode the
// organisation owns.
func TestTestRunOfAConfiguredMode(t *testing.T) {
	t.Parallel()
	og := startPages(t, fastSimulator)
	key := og.apiKey(t)
	b := og.testRun(t, key, `{"model":"conclave-standard","buckets":{"light":1}}`)
	require.Equal(t, "complete", b["status"], "%v", b)
	progress := b["progress"].(map[string]any)
	require.EqualValues(t, 1, progress["judged"], "the question was answered by both sides and judged: %v", b)
	require.EqualValues(t, 0, progress["failed"], "%v", b)

	r := jsonOf(t, "POST", og.origin+"/v1/certify", key, `{"model":"conclave-standard","dry_run":true}`, http.StatusForbidden)
	require.Equal(t, "mode_not_owned", errorCode(t, r))
}

// A run's page follows its batch without being reloaded by hand: opened
// while the batch is queued or running, it shows the result once the
// batch is complete (runs.js polls the progress and reloads the page).
func TestRunPageFollowsItsBatchInChromium(t *testing.T) {
	t.Parallel()
	// The simulator at four times its own pace: the run takes some seconds,
	// long enough to open its page before it ends.
	og := startPages(t, func(c *config.Config) { c.Simulator.TimeScale = 4 })
	key := og.apiKey(t)
	acc := jsonOf(t, "POST", og.origin+"/v1/tests", key, `{"model":"conclave-standard","buckets":{"light":2}}`, http.StatusOK)
	id := acc["batch_id"].(string)
	ctx := og.ownerBrowser(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/runs/test/"+id)))
	first := browsertest.WaitText(t, ctx, "Test run of")
	require.Regexp(t, `Queued|Running`, first, "the page was opened before the batch ended")
	end := time.Now().Add(60 * time.Second)
	for {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err == nil && strings.Contains(s, "Verdict") {
			break
		}
		require.True(t, time.Now().Before(end), "the page never showed the result: %s", s)
		time.Sleep(200 * time.Millisecond)
	}
}
