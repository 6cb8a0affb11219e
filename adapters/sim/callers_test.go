package sim

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// AcceptKey lets more keys than APIKey in, and Stats.Callers tells the
// callers apart by key fingerprint without keeping any key.
func TestAcceptKeyAndCallers(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01, APIKey: "sk-service", AcceptKey: func(k string) bool { return k == "sk-org-own-key" }})
	q := ask{format: "openai", model: "atlas", user: "What is 1 + 1?"}
	for key, want := range map[string]int{"sk-service": http.StatusOK, "sk-org-own-key": http.StatusOK, "sk-stranger": http.StatusUnauthorized} {
		q.key = key
		require.Equal(t, want, b.do(t, q).status, key)
	}
	q.key = "sk-org-own-key"
	b.do(t, q)

	callers := b.srv.Stats().Callers
	require.Equal(t, map[string]int{KeyCaller("sk-service"): 1, KeyCaller("sk-org-own-key"): 2}, callers, "refused calls are not counted")
	for who := range callers {
		require.True(t, strings.HasPrefix(who, "key:"))
		require.NotContains(t, who, "sk-")
	}
	require.NotEqual(t, KeyCaller("a"), KeyCaller("b"))
	require.Equal(t, "role:arn:aws:iam::1:role/x", RoleCaller("arn:aws:iam::1:role/x"))
}
