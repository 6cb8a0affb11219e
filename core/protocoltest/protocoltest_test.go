package protocoltest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestFixturesLoad(t *testing.T) {
	t.Parallel()
	names := Names()
	require.NotEmpty(t, names)
	for _, name := range names {
		set, err := Fixtures(name)
		require.NoError(t, err, name)
		require.Equal(t, name, set.Describe.Name)
		require.NotEmpty(t, set.Plans, name)
		require.NotEmpty(t, set.Scores, name)
	}
	for _, bad := range []string{"", "nope", "../protocoltest"} {
		_, err := Fixtures(bad)
		require.Error(t, err, bad)
	}
}

// replay plays a fixture set back, standing in for a protocol on a carrier.
type replay struct{ set *Set }

func (r *replay) Describe(context.Context) (*core.ProtocolInfo, error) { return r.set.Describe, nil }

func (r *replay) Plan(_ context.Context, task *core.JudgeTask) (*core.JudgePlan, error) {
	got, _ := json.Marshal(task)
	for _, c := range r.set.Plans {
		if want, _ := json.Marshal(c.Task); string(want) == string(got) {
			if c.WantError != "" {
				return nil, errors.New("replayed: " + c.WantError)
			}
			return c.Want, nil
		}
	}
	return nil, errors.New("no such task")
}

func (r *replay) Score(_ context.Context, in *core.JudgeVerdicts) (*core.JudgeScores, error) {
	got, _ := json.Marshal(in)
	for _, c := range r.set.Scores {
		if want, _ := json.Marshal(c.Verdicts); string(want) == string(got) {
			return c.Want, nil
		}
	}
	return nil, errors.New("no such verdicts")
}

func TestRunReplay(t *testing.T) {
	t.Parallel()
	require.False(t, native(&replay{}, "direct"))
	for _, name := range Names() {
		set, err := Fixtures(name)
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			Run(t, name, &replay{set: set})
		})
	}
}
