package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/oauth"
)

// River runs the oauth sweep: an app that registered itself and went
// unused past the retention is deleted, one used within it kept; expired
// sign-in requests go too.
func TestRiverRunsTheOAuthSweep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client := func(name string, unused time.Duration) string {
		c := &oauth.RegisteredClient{ID: core.NewID("client"), Client: oauth.Client{Native: true,
			ClientMetadata: oauth.ClientMetadata{ClientName: name, RedirectURIs: []string{"http://localhost/cb"}}}}
		require.NoError(t, b.store.RegisterClient(b.ctx, c))
		_, err := b.pool.Exec(b.ctx, "UPDATE oauth_clients SET last_used_at = now() - $2::interval WHERE id = $1", c.ID,
			unused.String())
		require.NoError(t, err)
		return c.ID
	}
	stale, recent := client("Stale", 48*time.Hour), client("Recent", time.Hour)
	req := &oauth.AuthRequest{ID: core.NewID("authreq"), ClientID: recent, RedirectURI: "http://localhost/cb",
		Scopes: core.AllScopes, CodeChallenge: "c", Resource: "http://localhost/mcp", ExpiresAt: time.Now().Add(-time.Minute)}
	require.NoError(t, b.store.CreateAuthRequest(b.ctx, req))

	r := b.newRunner(t, Config{OAuthSweepInterval: time.Second, RegisteredClientRetention: 24 * time.Hour})
	b.start(t, r)
	require.Eventually(t, func() bool { return b.completed(t, OAuthSweepArgs{}.Kind()) > 0 }, 20*time.Second, 50*time.Millisecond)
	_, err := b.store.RegisteredClient(b.ctx, stale)
	require.ErrorIs(t, err, core.ErrNotFound, "unused past the retention")
	_, err = b.store.RegisteredClient(b.ctx, recent)
	require.NoError(t, err)
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM oauth_auth_requests").Scan(&n))
	require.Zero(t, n)
	require.Contains(t, b.logs.String(), "swept the authorization server")
}
