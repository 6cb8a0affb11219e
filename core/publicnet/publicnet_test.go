package publicnet_test

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/publicnet"
)

func TestPublic(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"} {
		require.True(t, publicnet.Public(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "::1", "fc00::1", "ff02::1", "224.0.0.1", "255.255.255.255", "192.0.2.1", "2001:db8::1", "169.254.169.254", "100.64.0.1"} {
		require.False(t, publicnet.Public(netip.MustParseAddr(a)), a)
	}
}

func TestDialerRefusesWhatResolvesPrivate(t *testing.T) {
	t.Parallel()
	var dialled []string
	d := &publicnet.Dialer{
		LookupIP: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "rebound.example" {
				return []netip.Addr{netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("10.0.0.1")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("8.8.4.4")}, nil
		},
		Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			dialled = append(dialled, addr)
			c, s := net.Pipe()
			_ = s.Close()
			return c, nil
		},
	}
	for _, addr := range []string{"rebound.example:443", "127.0.0.1:443", "[::1]:443"} {
		_, err := d.DialContext(context.Background(), "tcp", addr)
		require.ErrorIs(t, err, publicnet.ErrNotPublic, addr)
	}
	require.Empty(t, dialled)
	c, err := d.DialContext(context.Background(), "tcp", "hooks.example:443")
	require.NoError(t, err)
	_ = c.Close()
	require.Equal(t, []string{"8.8.4.4:443"}, dialled, "the address checked is the one dialled")

	d.Allow = func(ip netip.Addr) bool { return ip.IsLoopback() }
	c, err = d.DialContext(context.Background(), "tcp", "127.0.0.1:443")
	require.NoError(t, err, "Allow lets a test's loopback receiver through")
	_ = c.Close()
}

func TestObviouslyPrivate(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"localhost", "api.localhost", "127.0.0.1", "10.0.0.8", "::1", "169.254.169.254"} {
		require.True(t, publicnet.ObviouslyPrivate(h), h)
	}
	for _, h := range []string{"hooks.example.com", "8.8.8.8", "localhost.example.com"} {
		require.False(t, publicnet.ObviouslyPrivate(h), h)
	}
}
