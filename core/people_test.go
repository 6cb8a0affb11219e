package core_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// The client address believes X-Forwarded-For only from a trusted proxy,
// and then only up to the first hop no trusted proxy added.
func TestClientAddress(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}
	cases := []struct {
		name    string
		peer    string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"no proxies: the peer", "203.0.113.9", []string{"198.51.100.1"}, nil, "203.0.113.9"},
		{"untrusted peer's header ignored", "203.0.113.9", []string{"198.51.100.1"}, proxies, "203.0.113.9"},
		{"trusted peer: the client it names", "10.1.2.3", []string{"198.51.100.1"}, proxies, "198.51.100.1"},
		{"a spoofed left part is not believed", "10.1.2.3", []string{"6.6.6.6, 198.51.100.1"}, proxies, "198.51.100.1"},
		{"two trusted hops", "10.1.2.3", []string{"198.51.100.1, 192.0.2.7"}, proxies, "198.51.100.1"},
		{"several headers", "10.1.2.3", []string{"6.6.6.6", "198.51.100.1"}, proxies, "198.51.100.1"},
		{"only proxies: the farthest", "10.1.2.3", []string{"10.9.9.9"}, proxies, "10.9.9.9"},
		{"no header: the peer", "10.1.2.3", nil, proxies, "10.1.2.3"},
		{"garbage hop: the last good one", "10.1.2.3", []string{"not-an-ip"}, proxies, "10.1.2.3"},
		{"mapped IPv4", "::ffff:203.0.113.9", nil, nil, "203.0.113.9"},
		{"unparseable peer", "pipe", nil, proxies, "pipe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, core.ClientAddress(tc.peer, tc.xff, tc.trusted))
		})
	}
}

func TestActorOfDefaultsToSystem(t *testing.T) {
	t.Parallel()
	require.Equal(t, core.ActorSystem, core.ActorOf(context.Background()).Kind)
	ctx := core.WithActor(context.Background(), core.Operator)
	require.Equal(t, core.Operator, core.ActorOf(ctx))
}

func TestSpell(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour: "7 days", 24 * time.Hour: "a day", time.Hour: "an hour", 12 * time.Hour: "12 hours",
		time.Minute: "a minute", 15 * time.Minute: "15 minutes", 90 * time.Second: "1m30s", 0: "0s",
	} {
		require.Equal(t, want, core.Spell(d))
	}
}
