package goplugin

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
)

// The transport is one unary gRPC method per plugin kind, described by hand
// so that no protoc-generated code is needed:
//
//	/conclave.plugin.v1.Adapter/Call
//	/conclave.plugin.v1.Protocol/Call
//
// Its messages travel in the "conclave-raw" codec below rather than
// protobuf. The method's input and output are the seat-abi/1 JSON of
// plugins/abi, so this carrier marshals exactly like the WebAssembly one.

// codecName is the codec's gRPC content-subtype
// (application/grpc+conclave-raw).
const codecName = "conclave-raw"

func init() {
	// The plugin's gRPC server picks a codec by the request's
	// content-subtype from the registry; the host names it per call.
	encoding.RegisterCodec(rawCodec{})
}

// request is one call: a seat-abi method name and its JSON input.
type request struct {
	Method string
	Input  []byte
}

// response is a call's result: the seat-abi JSON envelope.
type response struct {
	Output []byte
}

// rawCodec encodes request and response without protobuf. A request is the
// method name's length as a uvarint, the name, then the input bytes; a
// response is its output bytes as they are.
type rawCodec struct{}

func (rawCodec) Name() string { return codecName }

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *request:
		b := make([]byte, 0, binary.MaxVarintLen64+len(m.Method)+len(m.Input))
		b = binary.AppendUvarint(b, uint64(len(m.Method)))
		b = append(b, m.Method...)
		return append(b, m.Input...), nil
	case *response:
		return m.Output, nil
	}
	return nil, fmt.Errorf("goplugin: the %s codec cannot encode %T", codecName, v)
}

// Unmarshal copies what it keeps: gRPC reuses data once Unmarshal returns.
func (rawCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *request:
		n, k := binary.Uvarint(data)
		if k <= 0 || n > uint64(len(data)-k) {
			return fmt.Errorf("goplugin: malformed request: bad method length")
		}
		end := k + int(n)
		m.Method = string(data[k:end])
		m.Input = bytes.Clone(data[end:])
		return nil
	case *response:
		m.Output = bytes.Clone(data)
		return nil
	}
	return fmt.Errorf("goplugin: the %s codec cannot decode into %T", codecName, v)
}

// serviceName is the gRPC service that serves one kind of plugin. Each kind
// has its own service, so a host that loads a protocol binary as an adapter
// gets "unimplemented" at once rather than a misread describe.
func serviceName(kind string) string {
	switch kind {
	case kindAdapter:
		return "conclave.plugin.v1.Adapter"
	case kindProtocol:
		return "conclave.plugin.v1.Protocol"
	}
	panic("goplugin: unknown plugin kind " + kind)
}

// handler runs one seat-abi method inside the plugin and returns the JSON
// envelope; plugins/abi's ServeAdapter and ServeProtocol are handlers.
type handler func(ctx context.Context, method string, in []byte) []byte

// callService is the HandlerType of the hand-written ServiceDesc.
type callService interface {
	call(ctx context.Context, req *request) *response
}

// service serves one kind's Call method with a handler.
type service struct {
	fullMethod string
	handle     handler
}

func (s *service) call(ctx context.Context, req *request) *response {
	return &response{Output: s.handle(ctx, req.Method, req.Input)}
}

// registerService registers the Call service of kind on s. The handler gets
// the request's ctx, so the host's deadline and cancellation reach it.
func registerService(s grpc.ServiceRegistrar, kind string, h handler) {
	name := serviceName(kind)
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: name,
		HandlerType: (*callService)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Call", Handler: callHandler}},
	}, &service{fullMethod: "/" + name + "/Call", handle: h})
}

// callHandler has the shape protoc-gen-go-grpc generates for a unary method.
func callHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	req := new(request)
	if err := dec(req); err != nil {
		return nil, err
	}
	s := srv.(*service)
	if interceptor == nil {
		return s.call(ctx, req), nil
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: s.fullMethod}
	return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return s.call(ctx, req.(*request)), nil
	})
}

// remote is the host's end of a Call service: an abi.Caller over a gRPC
// connection. It is safe for concurrent use; concurrent calls share the
// connection.
type remote struct {
	conn       grpc.ClientConnInterface
	fullMethod string
	// exited is closed when the plugin process has exited; nil when the
	// connection is not to a process go-plugin started.
	exited <-chan struct{}
}

func newRemote(conn grpc.ClientConnInterface, kind string, exited <-chan struct{}) *remote {
	return &remote{conn: conn, fullMethod: "/" + serviceName(kind) + "/Call", exited: exited}
}

// Call implements abi.Caller. gRPC carries ctx's deadline and cancellation
// to the plugin. Once ctx has ended the error wraps its error
// (context.DeadlineExceeded or context.Canceled), even when the plugin's
// reply raced the deadline home: the plugin saw the same deadline, and its
// reply may be just that.
func (r *remote) Call(ctx context.Context, method string, in []byte) ([]byte, error) {
	res := new(response)
	err := r.conn.Invoke(ctx, r.fullMethod, &request{Method: method, Input: in}, res, grpc.CallContentSubtype(codecName))
	if ctxErr := ended(ctx, err); ctxErr != nil {
		return nil, fmt.Errorf("%s: %w", method, ctxErr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return res.Output, nil
}

// ended returns ctx's error if ctx has ended. It also reports a deadline
// that has passed while ctx's timer has not yet fired, and a deadline the
// plugin enforced first (the server ends the call itself when the deadline
// gRPC sent it passes; on a busy machine its timer can beat the host's).
func ended(ctx context.Context, callErr error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && (!time.Now().Before(d) || status.Code(callErr) == codes.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return nil
}
