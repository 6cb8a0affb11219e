// Package publicnet is the one address guard of Conclave's outbound
// requests to addresses a customer names (a client metadata document, an
// alert webhook): Public says whether an address is a public unicast one,
// and Dialer connects only to such addresses, checking the address it
// resolved itself at connect time so that a name cannot be rebound to a
// private address between a check and the connection (DNS rebinding).
package publicnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrNotPublic is a connection refused because its host is not (or does
// not resolve only to) public addresses, or cannot be resolved.
var ErrNotPublic = errors.New("not a public address")

// nonPublic are the ranges refused beside those netip.Addr's own
// predicates name (RFC 6890's special-purpose registry).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // this network
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may reach any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard
}

// Public reports whether ip is a public unicast address: not loopback,
// private, link-local, multicast, unspecified or any other special-purpose
// range.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Dialer connects only to public addresses: it resolves the host itself,
// refuses it unless every address it has is public, and dials the first.
// Its zero value uses the system resolver and a net.Dialer.
type Dialer struct {
	// LookupIP resolves a host name. Defaults to the system resolver.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an address already checked. Defaults to a
	// net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Allow, when set, is asked about an address that is not public, and
	// true lets it through. Only tests set it (a loopback receiver);
	// production leaves it nil.
	Allow func(ip netip.Addr) bool
}

// DialContext is a net.Dialer's DialContext that refuses every address
// that is not public; its refusals wrap ErrNotPublic.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		lookup := d.LookupIP
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		if ips, err = lookup(ctx, host); err != nil {
			return nil, fmt.Errorf("%w: %s could not be resolved", ErrNotPublic, host)
		}
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", ErrNotPublic, host)
	}
	for _, ip := range ips {
		if !Public(ip) && (d.Allow == nil || !d.Allow(ip)) {
			return nil, fmt.Errorf("%w: %s resolves to %s, which is not a public address", ErrNotPublic, host, ip)
		}
	}
	dial := d.Dial
	if dial == nil {
		var nd net.Dialer
		dial = nd.DialContext
	}
	return dial(ctx, network, net.JoinHostPort(ips[0].Unmap().String(), port))
}

// ObviouslyPrivate reports whether host (a URL's host name, without its
// port) plainly names an address that is not public: a literal address
// that is not, or "localhost" and its subdomains. It resolves nothing; a
// name that resolves to a private address is caught by Dialer when it is
// dialled.
func ObviouslyPrivate(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return !Public(ip)
	}
	h := host
	for len(h) > 0 && h[len(h)-1] == '.' {
		h = h[:len(h)-1]
	}
	return h == "localhost" || len(h) > len(".localhost") && h[len(h)-len(".localhost"):] == ".localhost"
}
