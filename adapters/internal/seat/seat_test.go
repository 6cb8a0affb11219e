package seat_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/internal/seat"
	"github.com/conclavehq/conclave/core"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	user := []core.Message{{Role: core.RoleUser, Content: "hi"}}
	require.EqualError(t, seat.Check(nil), "no seat request")
	require.EqualError(t, seat.Check(&core.SeatRequest{Messages: user}), "model is required")
	require.EqualError(t, seat.Check(&core.SeatRequest{Model: "m", MaxTokens: -1, Messages: user}), "max_tokens must not be negative, got -1")
	require.EqualError(t, seat.Check(&core.SeatRequest{Model: "m", Messages: []core.Message{{Role: "tool"}}}), `message 0 has unknown role "tool"`)
	require.NoError(t, seat.Check(&core.SeatRequest{Model: "m", Messages: user}))

	require.EqualError(t, seat.Conversational(&core.SeatRequest{Messages: []core.Message{{Role: core.RoleSystem}}}), "no user or assistant message")
	require.NoError(t, seat.Conversational(&core.SeatRequest{Messages: user}))
}

// Body keeps a prompt's <, > and & as written and ends at the closing
// brace.
func TestBody(t *testing.T) {
	t.Parallel()
	b, err := seat.Body(struct {
		Prompt string `json:"prompt"`
		N      int    `json:"n"`
	}{"a <b> & c", 2})
	require.NoError(t, err)
	require.Equal(t, `{"prompt":"a <b> & c","n":2}`, string(b))
	_, err = seat.Body(func() {})
	require.Error(t, err, "what JSON cannot hold is an error")
}

// Body's buffer is reused, so each body must be a copy of its own: a later
// body never changes an earlier one.
func TestBodiesAreTheirOwn(t *testing.T) {
	t.Parallel()
	long, err := seat.Body(map[string]string{"prompt": strings.Repeat("x", 5000)})
	require.NoError(t, err)
	short, err := seat.Body(map[string]string{"prompt": "y"})
	require.NoError(t, err)
	require.Equal(t, `{"prompt":"`+strings.Repeat("x", 5000)+`"}`, string(long))
	require.Equal(t, `{"prompt":"y"}`, string(short))
}
