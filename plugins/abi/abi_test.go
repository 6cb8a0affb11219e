package abi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/openai"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
)

// inProcess is a Caller that runs the guest side directly: the envelope
// round trip without a carrier.
func inProcess(a core.Adapter) abi.Adapter {
	return abi.Adapter{C: abi.CallerFunc(func(ctx context.Context, method string, in []byte) ([]byte, error) {
		return abi.ServeAdapter(ctx, a, method, in), nil
	})}
}

func TestNilInputIsRefusedAcrossTheABI(t *testing.T) {
	t.Parallel()
	a := inProcess(openai.New())
	var e *abi.Error
	_, err := a.BuildRequest(t.Context(), nil)
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, abi.CodeBadInput, e.Code)
	_, err = a.ParseResponse(t.Context(), nil)
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, abi.CodeBadInput, e.Code)

	out := abi.ServeAdapter(t.Context(), openai.New(), abi.MethodBuildRequest, []byte("  "))
	require.Contains(t, string(out), abi.CodeBadInput)
	out = abi.ServeAdapter(t.Context(), openai.New(), "frobnicate", nil)
	require.Contains(t, string(out), abi.CodeUnknownMethod)

	info, err := a.Describe(t.Context())
	require.NoError(t, err, "describe takes no input")
	require.Equal(t, "openai", info.Name)
}
