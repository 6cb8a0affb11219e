package adaptertest

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
		req, ok := set.Request("2kb")
		require.True(t, ok, name)
		size := len(req.Request.System)
		for _, m := range req.Request.Messages {
			size += len(m.Content)
		}
		require.InDelta(t, 2048, size, 512, "%s: the 2kb prompt is about 2 KB", name)
		for _, c := range set.Requests {
			if c.Want != nil {
				require.True(t, json.Valid(c.Want.Body), "%s/%s: want body is JSON", name, c.Name)
			}
		}
		_, ok = set.Response("success")
		require.True(t, ok, name)
	}

	a, err := Fixtures(names[0])
	require.NoError(t, err)
	a.Requests[0].Request.Model = "changed"
	b, err := Fixtures(names[0])
	require.NoError(t, err)
	require.NotEqual(t, "changed", b.Requests[0].Request.Model, "each Set is fresh")

	for _, bad := range []string{"", "nope", "../adaptertest", "openai/request"} {
		_, err := Fixtures(bad)
		require.Error(t, err, bad)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		body   []byte
		base64 bool
	}{
		{"compact object", []byte(`{"a":[1,2],"b":"<x> & \u00e9"}`), false},
		{"escapes kept", []byte(`{"a":"\u003cb\u003e"}`), false},
		{"indented object", []byte("{\n  \"a\": 1\n}"), false},
		{"trailing newline", []byte("{\"a\":1}\n"), false},
		{"text", []byte("upstream reset\r\n"), false},
		{"json string", []byte(`"quoted"`), false},
		{"invalid utf-8", []byte{0xff, 0xfe, 'x'}, true},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := toWireResponse(&core.HTTPResponse{Status: 200, Body: tc.body})
			require.Equal(t, tc.base64, w.BodyBase64 != nil)
			b, err := marshal(w, "  ")
			require.NoError(t, err)
			var back wireResponse
			require.NoError(t, json.Unmarshal(b, &back))
			require.Equal(t, string(tc.body), string(back.response().Body))
		})
	}
}

func TestHeaderLines(t *testing.T) {
	t.Parallel()
	h := map[string]string{"X-Amzn-Errortype": "ThrottlingException:http://x/", "Content-Type": "application/json"}
	require.Equal(t, "Content-Type: application/json\nX-Amzn-Errortype: ThrottlingException:http://x/\n", headerLines(h))
	require.Equal(t, h, parseHeaderLines(headerLines(h)))
	require.Nil(t, parseHeaderLines("no colon here"))
}

func TestNative(t *testing.T) {
	t.Parallel()
	require.True(t, native(&replay{}, "adaptertest"))
	require.False(t, native(&replay{}, "openai"))
	require.False(t, native(nil, "openai"))
}

// replay plays a fixture set back: a stand-in for an adapter on a carrier,
// which lets Run be tested here without importing an adapter.
type replay struct{ set *Set }

func (r *replay) Describe(context.Context) (*core.AdapterInfo, error) { return r.set.Describe, nil }

func (r *replay) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	if req == nil {
		return nil, errors.New("no seat request")
	}
	got, _ := json.Marshal(req)
	for _, c := range r.set.Requests {
		if want, _ := json.Marshal(c.Request); string(want) == string(got) {
			if c.WantError != "" {
				return nil, errors.New("replayed: " + c.WantError)
			}
			return c.Want, nil
		}
	}
	return nil, errors.New("no such request")
}

func (r *replay) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res == nil {
		return nil, errors.New("no response")
	}
	for _, c := range r.set.Responses {
		if c.Response.Status == res.Status && string(c.Response.Body) == string(res.Body) {
			return c.Want, nil
		}
	}
	return nil, errors.New("no such response")
}

// TestRunReplay runs the suite against a replay of each set: an adapter
// that reproduces the goldens passes, and -update leaves the goldens alone
// for it because it is not the native adapter.
func TestRunReplay(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		set, err := Fixtures(name)
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			Run(t, name, &replay{set: set})
		})
	}
}
