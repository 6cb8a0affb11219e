package goplugin

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
	"github.com/conclavehq/conclave/plugins/goplugin/internal/testplugin"
)

// TestTransportInProcess runs the Call service and its remote in one
// process, over a real gRPC connection, without go-plugin.
func TestTransportInProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	require.NoError(t, err)
	srv := grpc.NewServer()
	native := testplugin.New()
	registerService(srv, kindAdapter, func(ctx context.Context, method string, in []byte) []byte {
		return abi.ServeAdapter(ctx, native, method, in)
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err := grpc.NewClient("unix://"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, conn.Close())
		srv.Stop()
		require.NoError(t, <-served)
	})
	a := abi.Adapter{C: newRemote(conn, kindAdapter, nil)}

	got, err := a.BuildRequest(ctx, &core.SeatRequest{Model: "m", Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	want, err := native.BuildRequest(ctx, &core.SeatRequest{Model: "m", Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	require.Equal(t, want, got)

	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = a.BuildRequest(dctx, &core.SeatRequest{Model: testplugin.ModelBlock})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A protocol's service is not there.
	_, err = abi.Protocol{C: newRemote(conn, kindProtocol, nil)}.Describe(ctx)
	require.ErrorContains(t, err, "Unimplemented")
}

func TestRawCodec(t *testing.T) {
	t.Parallel()
	c := rawCodec{}
	for _, req := range []*request{
		{Method: "build_request", Input: []byte(`{"model":"m"}`)},
		{Method: "describe"},
		{Method: "", Input: []byte("x")},
	} {
		b, err := c.Marshal(req)
		require.NoError(t, err)
		var got request
		require.NoError(t, c.Unmarshal(b, &got))
		require.Equal(t, req.Method, got.Method)
		require.Equal(t, string(req.Input), string(got.Input))
	}
	for _, bad := range [][]byte{nil, {0x80}, {5, 'a'}} {
		require.Error(t, c.Unmarshal(bad, &request{}), "%q", bad)
	}
	_, err := c.Marshal("a string")
	require.Error(t, err)
}

// FuzzRawCodec feeds the request decoder what a peer could send.
func FuzzRawCodec(f *testing.F) {
	f.Add([]byte("\x0dbuild_request{}"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		var req request
		if err := (rawCodec{}).Unmarshal(data, &req); err != nil {
			return
		}
		b, err := rawCodec{}.Marshal(&req)
		require.NoError(t, err)
		var again request
		require.NoError(t, rawCodec{}.Unmarshal(b, &again))
		require.Equal(t, req.Method, again.Method)
		require.Equal(t, string(req.Input), string(again.Input))
	})
}
