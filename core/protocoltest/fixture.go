package protocoltest

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/conclavehq/conclave/core"
)

//go:embed testdata
var testdata embed.FS

// Set is one protocol's golden fixtures. Each call to Fixtures returns a
// fresh Set the caller may change.
type Set struct {
	Protocol string
	// Describe is what the protocol's Describe must return.
	Describe *core.ProtocolInfo
	Plans    []PlanCase  // sorted by name
	Scores   []ScoreCase // sorted by name
}

// PlanCase is one Plan fixture.
type PlanCase struct {
	Name string
	Note string // what the case shows, for readers
	Task *core.JudgeTask
	// Want is the exact plan; nil when WantError is set.
	Want *core.JudgePlan
	// WantError, when set, is text Plan's error must contain.
	WantError string
}

// ScoreCase is one Score fixture.
type ScoreCase struct {
	Name     string
	Note     string
	Verdicts *core.JudgeVerdicts
	Want     *core.JudgeScores
}

// Plan returns the plan case called name.
func (s *Set) Plan(name string) (PlanCase, bool) {
	for _, c := range s.Plans {
		if c.Name == name {
			return c, true
		}
	}
	return PlanCase{}, false
}

// Score returns the score case called name.
func (s *Set) Score(name string) (ScoreCase, bool) {
	for _, c := range s.Scores {
		if c.Name == name {
			return c, true
		}
	}
	return ScoreCase{}, false
}

// Names lists the protocols that have fixtures, sorted.
func Names() []string {
	entries, err := fs.ReadDir(testdata, "testdata")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// planFixture and scoreFixture are the cases as stored: the same fields,
// with JSON names.
type planFixture struct {
	Name      string          `json:"name"`
	Note      string          `json:"note,omitempty"`
	Task      *core.JudgeTask `json:"task"`
	Want      *core.JudgePlan `json:"want,omitempty"`
	WantError string          `json:"want_error,omitempty"`
}

type scoreFixture struct {
	Name     string              `json:"name"`
	Note     string              `json:"note,omitempty"`
	Verdicts *core.JudgeVerdicts `json:"verdicts"`
	Want     *core.JudgeScores   `json:"want"`
}

// Fixtures parses the fixtures of protocolName.
func Fixtures(protocolName string) (*Set, error) {
	if protocolName == "" || strings.ContainsAny(protocolName, `/\.`) {
		return nil, fmt.Errorf("protocoltest: bad protocol name %q", protocolName)
	}
	dir := path.Join("testdata", protocolName)
	if _, err := fs.Stat(testdata, dir); err != nil {
		return nil, fmt.Errorf("protocoltest: no fixtures for protocol %q", protocolName)
	}
	set := &Set{Protocol: protocolName}
	if err := readJSON(path.Join(dir, "describe.json"), &set.Describe); err != nil {
		return nil, err
	}
	err := eachFile(path.Join(dir, "plan"), func(name, file string) error {
		var f planFixture
		if err := readJSON(file, &f); err != nil {
			return err
		}
		switch {
		case f.Name != name:
			return fmt.Errorf("protocoltest: %s: needs \"name\": %q, the file's base name", file, name)
		case f.Task == nil:
			return fmt.Errorf("protocoltest: %s: has no task", file)
		case (f.Want == nil) == (f.WantError == ""):
			return fmt.Errorf("protocoltest: %s: needs exactly one of want and want_error", file)
		}
		set.Plans = append(set.Plans, PlanCase(f))
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachFile(path.Join(dir, "score"), func(name, file string) error {
		var f scoreFixture
		if err := readJSON(file, &f); err != nil {
			return err
		}
		if f.Name != name || f.Verdicts == nil {
			return fmt.Errorf("protocoltest: %s: needs \"name\": %q and verdicts", file, name)
		}
		set.Scores = append(set.Scores, ScoreCase(f))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

func eachFile(dir string, fn func(name, file string) error) error {
	entries, err := fs.ReadDir(testdata, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("protocoltest: reading %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if err := fn(strings.TrimSuffix(e.Name(), ".json"), path.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func readJSON(file string, v any) error {
	b, err := testdata.ReadFile(file)
	if err != nil {
		return fmt.Errorf("protocoltest: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("protocoltest: decoding %s: %w", file, err)
	}
	return nil
}

// writeFixture writes v, indented and without HTML escaping, under this
// package's testdata directory in the source tree.
func writeFixture(v any, elem ...string) error {
	_, self, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(self) {
		return errors.New("protocoltest: -update needs the source tree (is the test built with -trimpath?)")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	file := filepath.Join(append([]string{filepath.Dir(self), "testdata"}, elem...)...)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("protocoltest: writing %s: %w", file, err)
	}
	return nil
}
