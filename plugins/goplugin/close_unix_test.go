//go:build unix

package goplugin_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/goplugin/internal/testplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
)

func TestCloseStopsEveryProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, goplugin.Config{})
	a := b.loadAdapter(t, "adapter")
	p, err := b.host.LoadProtocol(ctx, entry(t, "testprotocol", "protocol", manifest.KindProtocol))
	require.NoError(t, err)
	procs := goplugin.Processes(b.host)
	require.Len(t, procs, 2)
	for _, proc := range procs {
		require.NoError(t, syscall.Kill(proc.PID, 0), "plugin %s runs", proc.Name)
		require.DirExists(t, proc.Dir)
	}

	// A call in flight when the host closes fails with ErrClosed, not as a
	// crash.
	inFlight := make(chan error, 1)
	go func() {
		_, err := a.BuildRequest(context.WithoutCancel(ctx), &core.SeatRequest{Model: testplugin.ModelBlock})
		inFlight <- err
	}()
	require.Eventually(t, func() bool {
		_, blocked := probe(ctx, t, a)
		return blocked == 1
	}, 5*time.Second, 5*time.Millisecond)

	require.NoError(t, b.host.Close())
	err = <-inFlight
	require.ErrorIs(t, err, goplugin.ErrClosed)
	require.NotErrorIs(t, err, goplugin.ErrPluginCrashed)
	for _, proc := range procs {
		require.ErrorIs(t, syscall.Kill(proc.PID, 0), syscall.ESRCH, "plugin %s is gone", proc.Name)
		require.NoDirExists(t, proc.Dir)
	}

	require.NoError(t, b.host.Close(), "Close is safe twice")
	_, err = a.Describe(ctx)
	require.ErrorIs(t, err, goplugin.ErrClosed)
	_, err = p.Plan(ctx, &core.JudgeTask{})
	require.ErrorIs(t, err, goplugin.ErrClosed)
	_, err = b.host.LoadAdapter(ctx, entry(t, "testadapter", "late", manifest.KindAdapter))
	require.ErrorIs(t, err, goplugin.ErrClosed)
}
