package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// A key billing its organisation's balance tests a configured mode it can
// call (conclave-standard): the run is charged its quote, answered by the
// configured mode itself (version 0, from the catalogue) and by its
// baseline, judged, and completes. Certifying it still needs a mode the
// organisation owns.
func TestTestRunOfAConfiguredMode(t *testing.T) {
	t.Parallel()
	og := startPages(t, fastSimulator)
	secret, hash := core.NewKeySecret(false)
	_, err := og.g.db.store.CreateKey(context.Background(), &core.CreateKeyParams{OrgID: og.org.ID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)
	base := og.origin

	acc := jsonOf(t, "POST", base+"/v1/tests", secret, `{"model":"conclave-standard","buckets":{"light":1}}`, http.StatusOK)
	id, _ := acc["batch_id"].(string)
	require.NotEmpty(t, id, "%v", acc)
	end := time.Now().Add(90 * time.Second)
	var b map[string]any
	for {
		b = jsonOf(t, "GET", base+"/v1/tests?batch_id="+id, secret, "", http.StatusOK)["batch"].(map[string]any)
		if s := b["status"]; s == "complete" || s == "failed" {
			break
		}
		require.True(t, time.Now().Before(end), "the test run did not finish: %v", b)
		time.Sleep(250 * time.Millisecond)
	}
	require.Equal(t, "complete", b["status"], "%v", b)
	progress := b["progress"].(map[string]any)
	require.EqualValues(t, 1, progress["judged"], "the question was answered by both sides and judged: %v", b)
	require.EqualValues(t, 0, progress["failed"], "%v", b)

	r := jsonOf(t, "POST", base+"/v1/certify", secret, `{"model":"conclave-standard","dry_run":true}`, http.StatusForbidden)
	require.Equal(t, "mode_not_owned", errorCode(t, r))
}
