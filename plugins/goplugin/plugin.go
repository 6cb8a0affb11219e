package goplugin

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
)

// The handshake a host and its plugins share. go-plugin passes the cookie to
// the plugin in its environment; a binary started without it refuses to run
// as a plugin. ProtocolVersion changes only when this carrier's wire format
// does (the seat-abi version is separate: abi.Version).
const (
	MagicCookieKey   = "CONCLAVE_PLUGIN"
	MagicCookieValue = "5e7a1c0d-seat-abi-grpc"
	ProtocolVersion  = 1
)

// Plugin kinds: the go-plugin names a plugin is dispensed under.
const (
	kindAdapter  = abi.KindAdapter  // "adapter"
	kindProtocol = abi.KindProtocol // "protocol"
)

// maxMessageBytes caps one call's input or output. gRPC's default server cap
// of 4 MiB is too small: a provider response the egress layer accepts (up to
// 8 MiB by default) is a third larger again as base64 in parse_response's
// JSON input.
const maxMessageBytes = 64 << 20

// Handshake returns the go-plugin handshake of Conclave plugins.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// PluginSet returns the host's go-plugin plugin set: "adapter" and
// "protocol". Dispensing either returns an abi.Caller bound to that kind's
// service; wrap it in abi.Adapter or abi.Protocol. Host does this for you.
func PluginSet() plugin.PluginSet {
	return plugin.PluginSet{
		kindAdapter:  &grpcPlugin{kind: kindAdapter},
		kindProtocol: &grpcPlugin{kind: kindProtocol},
	}
}

// grpcPlugin is one kind of plugin for go-plugin. In a plugin process handle
// serves it; in the host handle is nil.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	kind   string
	handle handler
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.handle == nil {
		return errors.New("goplugin: no " + p.kind + " to serve")
	}
	registerService(s, p.kind, p.handle)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin. go-plugin cancels ctx when the
// plugin process exits, which is how the host tells a crash from a failed
// call.
func (p *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return newRemote(conn, p.kind, ctx.Done()), nil
}

// ServeAdapter serves a as a go-plugin plugin process; it is the whole main
// of an adapter plugin. It returns when the host closes the plugin. Started
// by hand rather than by a host, it prints a notice and exits with status 1.
func ServeAdapter(a core.Adapter) {
	serve(kindAdapter, func(ctx context.Context, method string, in []byte) []byte {
		return abi.ServeAdapter(ctx, a, method, in)
	})
}

// ServeProtocol serves p as a go-plugin plugin process; it is the whole main
// of a judging-protocol plugin. See ServeAdapter.
func ServeProtocol(p core.Protocol) {
	serve(kindProtocol, func(ctx context.Context, method string, in []byte) []byte {
		return abi.ServeProtocol(ctx, p, method, in)
	})
}

func serve(kind string, h handler) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake(),
		Plugins:         plugin.PluginSet{kind: &grpcPlugin{kind: kind, handle: h}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, grpc.MaxRecvMsgSize(maxMessageBytes)))
		},
	})
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)
