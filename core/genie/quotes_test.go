package genie_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/genie"
)

func TestValidQuoteID(t *testing.T) {
	t.Parallel()
	for range 100 {
		id := core.NewID("qt")
		require.True(t, genie.ValidQuoteID(id), id)
	}
	for _, bad := range []string{"", "qt_", "qt_0123456789abcdefghj", "qt_0123456789abcdefghjkm", "QT_0123456789abcdefghjk",
		"qt_0123456789ABCDEFGHJK", "qt_0123456789abcdefghil", "key_0123456789abcdefghj", "qt-0123456789abcdefghjk",
		"qt_0123456789abcdefgh\x00k", strings.Repeat("q", 23)} {
		require.False(t, genie.ValidQuoteID(bad), "%q", bad)
	}
}

// An open quote past its expiry is expired unless its approval was
// recorded before; a launched or used quote stays as it is.
func TestQuoteStatusAt(t *testing.T) {
	t.Parallel()
	now := time.Now()
	q := &genie.Quote{Status: genie.QuoteOpen, ExpiresAt: now}
	require.Equal(t, genie.QuoteOpen, q.StatusAt(now.Add(-time.Second)))
	require.Equal(t, genie.QuoteExpired, q.StatusAt(now))
	q.ApprovedAt = now.Add(-time.Minute)
	require.Equal(t, genie.QuoteOpen, q.StatusAt(now.Add(time.Hour)))
	for _, s := range []genie.QuoteStatus{genie.QuoteLaunched, genie.QuoteUsed} {
		require.Equal(t, s, (&genie.Quote{Status: s, ExpiresAt: now}).StatusAt(now.Add(time.Hour)))
	}
}
