// Package protocoltest is the conformance suite for core.Protocol: golden
// fixtures for every built-in judging protocol and the checks every carrier
// of a protocol must pass with them.
//
// Fixtures are embedded from testdata/<protocol>/:
//
//	describe.json      the ProtocolInfo Describe must return
//	plan/<name>.json   {"name","note"?,"task": JudgeTask, "want": JudgePlan}
//	                   or {…, "want_error": "text the error must contain"}
//	score/<name>.json  {"name","note"?,"verdicts": JudgeVerdicts, "want": JudgeScores}
//
// Run the suite from a protocol's tests:
//
//	func TestConformance(t *testing.T) {
//		t.Parallel()
//		protocoltest.Run(t, "direct", direct.New())
//	}
//
// go test -run Conformance -update rewrites the want parts from the protocol
// under test, only when it is the native one (its Go package is named for
// it). The -update flag is shared with core/adaptertest: whichever package
// initialises first defines it, and a test package importing either must not
// define its own. Writing needs the source tree, so not with -trimpath.
//
// This package imports only the standard library, core and testify.
package protocoltest

import (
	"context"
	"encoding/json"
	"flag"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the want parts of golden fixtures from the native implementation under test")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// native reports whether v is the native implementation called name: a type
// declared in a Go package of that name.
func native(v any, name string) bool {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return false
	}
	p := t.PkgPath()
	return p == name || strings.HasSuffix(p, "/"+name)
}

// Run runs every fixture of protocolName against p as parallel subtests:
// "describe", "plan/<name>" and "score/<name>". Plans and scores must equal
// the fixture's deeply, be the same when computed twice, leave their input
// unchanged, and survive a JSON round trip as they must through the plugin
// carriers; scores must also pass CheckScores.
func Run(t *testing.T, protocolName string, p core.Protocol) {
	t.Helper()
	set, err := Fixtures(protocolName)
	require.NoError(t, err)
	update := updating() && native(p, protocolName)
	if updating() && !update {
		t.Logf("-update ignored: %T is not the native %s protocol", p, protocolName)
	}

	t.Run("describe", func(t *testing.T) {
		t.Parallel()
		got, err := p.Describe(t.Context())
		require.NoError(t, err)
		require.NotNil(t, got)
		if update {
			require.NoError(t, writeFixture(got, protocolName, "describe.json"))
			return
		}
		require.Equal(t, set.Describe, got)
	})

	for _, c := range set.Plans {
		t.Run("plan/"+c.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			before := mustJSON(t, c.Task)
			got, err := p.Plan(ctx, c.Task)
			require.JSONEq(t, before, mustJSON(t, c.Task), "Plan changed the task it was given")
			if update {
				c.Want, c.WantError = got, ""
				if err != nil {
					c.Want, c.WantError = nil, err.Error()
				}
				require.NoError(t, writeFixture(planFixture(c), protocolName, "plan", c.Name+".json"))
				return
			}
			if c.WantError != "" {
				require.ErrorContains(t, err, c.WantError)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.Want, got)
			requireRoundTrip(t, got, &core.JudgePlan{})
			again, err := p.Plan(ctx, c.Task)
			require.NoError(t, err)
			require.Equal(t, got, again, "Plan gave two results for one task")
		})
	}

	for _, c := range set.Scores {
		t.Run("score/"+c.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			before := mustJSON(t, c.Verdicts)
			got, err := p.Score(ctx, c.Verdicts)
			require.NoError(t, err)
			require.JSONEq(t, before, mustJSON(t, c.Verdicts), "Score changed the verdicts it was given")
			if update {
				c.Want = got
				require.NoError(t, writeFixture(scoreFixture(c), protocolName, "score", c.Name+".json"))
				return
			}
			CheckScores(t, &c.Verdicts.Task, got, nil)
			require.Equal(t, c.Want, got)
			again, err := p.Score(ctx, c.Verdicts)
			require.NoError(t, err)
			require.Equal(t, got, again, "Score gave two results for one input")
		})
	}
}

// CheckScores checks what Score made of a task's verdicts, whatever they
// were: a nil error, a non-nil Scores map whose keys are answer ids and
// whose values lie in [0, 1], a Best that is "" or an answer id, a
// Divergence in [0, 1] when set, a non-negative Unreadable count, and a
// result that survives a JSON round trip. Fuzz targets call it.
func CheckScores(t testing.TB, task *core.JudgeTask, s *core.JudgeScores, err error) {
	t.Helper()
	require.NoError(t, err)
	require.NotNil(t, s)
	require.NotNil(t, s.Scores, "Scores is an empty map, not nil, when nothing was scored")
	ids := map[string]bool{}
	for _, a := range task.Answers {
		ids[a.ID] = true
	}
	for id, v := range s.Scores {
		require.Truef(t, ids[id], "score for %q, which is no answer's id", id)
		require.Truef(t, v >= 0 && v <= 1, "score %v for %q is outside [0, 1]", v, id)
	}
	if s.Best != "" {
		require.Truef(t, ids[s.Best], "best %q is no answer's id", s.Best)
	}
	if s.Divergence != nil {
		require.Truef(t, *s.Divergence >= 0 && *s.Divergence <= 1, "divergence %v is outside [0, 1]", *s.Divergence)
	}
	require.GreaterOrEqual(t, s.Unreadable, 0)
	requireRoundTrip(t, s, &core.JudgeScores{})
}

// FuzzScore fuzzes p's Score with CheckScores, seeded with the verdict texts
// of protocolName's score fixtures. Each input is one verdict's text, judged
// against the task of the first score fixture.
func FuzzScore(f *testing.F, protocolName string, p core.Protocol) {
	set, err := Fixtures(protocolName)
	require.NoError(f, err)
	require.NotEmpty(f, set.Scores, "score fixtures to seed from")
	task := set.Scores[0].Verdicts.Task
	for _, c := range set.Scores {
		for _, v := range c.Verdicts.Verdicts {
			f.Add(v.PromptID, v.Text)
		}
	}
	f.Fuzz(func(t *testing.T, promptID, text string) {
		in := &core.JudgeVerdicts{Task: task, Verdicts: []core.JudgeVerdict{
			{PromptID: promptID, Judge: "fuzz", Text: text},
			{PromptID: promptID, Judge: "fuzz-2", Text: text + text},
		}}
		s, err := p.Score(context.Background(), in)
		CheckScores(t, &task, s, err)
		require.LessOrEqual(t, s.Unreadable, len(in.Verdicts))
	})
}

// requireRoundTrip checks that v reads back equal from its JSON into empty.
func requireRoundTrip[T any](t testing.TB, v *T, empty *T) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, empty))
	require.Equal(t, v, empty, "the result changes through JSON")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
