package adaptertest

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
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/conclavehq/conclave/core"
)

//go:embed testdata
var testdata embed.FS

// Set is one adapter's golden fixtures. Each call to Fixtures returns a
// fresh Set the caller may change.
type Set struct {
	Adapter string
	// Describe is what the adapter's Describe must return.
	Describe  *core.AdapterInfo
	Requests  []RequestCase  // sorted by name
	Responses []ResponseCase // sorted by name
	// Exempt names the finish reasons and error classes the adapter's
	// provider never produces, each with the reason, from
	// testdata/<adapter>/exemptions.json. Run's coverage check skips them.
	Exempt Exemptions
}

// Exemptions are named gaps in a fixture set's coverage: finish reason or
// error class → why no response of the provider can show it.
type Exemptions struct {
	Finishes map[string]string          `json:"finishes,omitempty"`
	Classes  map[core.ErrorClass]string `json:"classes,omitempty"`
}

func (e *Exemptions) check() error {
	for f, why := range e.Finishes {
		if !slices.Contains(finishes, f) || strings.TrimSpace(why) == "" {
			return fmt.Errorf("finishes: %q needs to be a finish reason with a reason why", f)
		}
	}
	for c, why := range e.Classes {
		if !slices.Contains(providerClasses, c) || strings.TrimSpace(why) == "" {
			return fmt.Errorf("classes: %q needs to be a provider error class with a reason why", c)
		}
	}
	return nil
}

// RequestCase is one BuildRequest fixture.
type RequestCase struct {
	Name    string
	Note    string // what the case shows, for readers
	Request *core.SeatRequest
	// Want is the exact request BuildRequest must build; nil when WantError
	// is set.
	Want *core.HTTPRequest
	// WantError, when set, is text BuildRequest's error must contain.
	WantError string
}

// ResponseCase is one ParseResponse fixture.
type ResponseCase struct {
	Name     string
	Note     string
	Response *core.HTTPResponse
	Want     *core.SeatAnswer
}

// Request returns the request case called name.
func (s *Set) Request(name string) (RequestCase, bool) {
	for _, c := range s.Requests {
		if c.Name == name {
			return c, true
		}
	}
	return RequestCase{}, false
}

// Response returns the response case called name.
func (s *Set) Response(name string) (ResponseCase, bool) {
	for _, c := range s.Responses {
		if c.Name == name {
			return c, true
		}
	}
	return ResponseCase{}, false
}

// Names lists the adapters that have fixtures, sorted.
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

// Fixtures parses the fixtures of adapterName.
func Fixtures(adapterName string) (*Set, error) {
	if adapterName == "" || strings.ContainsAny(adapterName, `/\.`) {
		return nil, fmt.Errorf("adaptertest: bad adapter name %q", adapterName)
	}
	dir := path.Join("testdata", adapterName)
	if _, err := fs.Stat(testdata, dir); err != nil {
		return nil, fmt.Errorf("adaptertest: no fixtures for adapter %q", adapterName)
	}
	set := &Set{Adapter: adapterName}
	if err := readJSON(path.Join(dir, "describe.json"), &set.Describe); err != nil {
		return nil, err
	}
	if file := path.Join(dir, "exemptions.json"); exists(file) {
		if err := readJSON(file, &set.Exempt); err != nil {
			return nil, err
		}
		if err := set.Exempt.check(); err != nil {
			return nil, fmt.Errorf("adaptertest: %s: %w", file, err)
		}
	}
	err := eachFile(path.Join(dir, "request"), func(name, file string) error {
		var f requestFile
		if err := readJSON(file, &f); err != nil {
			return err
		}
		if err := f.check(name); err != nil {
			return fmt.Errorf("adaptertest: %s: %w", file, err)
		}
		set.Requests = append(set.Requests, RequestCase{
			Name: f.Name, Note: f.Note, Request: f.Request, Want: f.Want.request(), WantError: f.WantError,
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachFile(path.Join(dir, "response"), func(name, file string) error {
		var f responseFile
		if err := readJSON(file, &f); err != nil {
			return err
		}
		if f.Name != name || f.Response == nil {
			return fmt.Errorf("adaptertest: %s: needs \"name\": %q and a response", file, name)
		}
		set.Responses = append(set.Responses, ResponseCase{
			Name: f.Name, Note: f.Note, Response: f.Response.response(), Want: f.Want,
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

func exists(file string) bool {
	_, err := fs.Stat(testdata, file)
	return err == nil
}

// eachFile calls fn for every .json file of dir, in name order, with the
// name the file's case must carry (its base name).
func eachFile(dir string, fn func(name, file string) error) error {
	entries, err := fs.ReadDir(testdata, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("adaptertest: reading %s: %w", dir, err)
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
		return fmt.Errorf("adaptertest: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("adaptertest: decoding %s: %w", file, err)
	}
	return nil
}

// requestFile is a request fixture as stored.
type requestFile struct {
	Name      string            `json:"name"`
	Note      string            `json:"note,omitempty"`
	Request   *core.SeatRequest `json:"request"`
	Want      *wireRequest      `json:"want,omitempty"`
	WantError string            `json:"want_error,omitempty"`
}

func (f *requestFile) check(name string) error {
	switch {
	case f.Name != name:
		return fmt.Errorf("needs \"name\": %q, the file's base name", name)
	case f.Request == nil:
		return errors.New("has no request")
	case (f.Want == nil) == (f.WantError == ""):
		return errors.New("needs exactly one of want and want_error")
	}
	return nil
}

// responseFile is a response fixture as stored.
type responseFile struct {
	Name     string           `json:"name"`
	Note     string           `json:"note,omitempty"`
	Response *wireResponse    `json:"response"`
	Want     *core.SeatAnswer `json:"want"`
}

// wireRequest is core.HTTPRequest with a readable body.
type wireRequest struct {
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Header     map[string]string `json:"header,omitempty"`
	Body       body              `json:"body,omitempty"`
	BodyBase64 []byte            `json:"body_base64,omitempty"`
}

func (w *wireRequest) request() *core.HTTPRequest {
	if w == nil {
		return nil
	}
	return &core.HTTPRequest{Method: w.Method, Path: w.Path, Header: w.Header, Body: w.Body.or(w.BodyBase64)}
}

func toWireRequest(r *core.HTTPRequest) *wireRequest {
	if r == nil {
		return nil
	}
	w := &wireRequest{Method: r.Method, Path: r.Path, Header: r.Header}
	w.Body, w.BodyBase64 = splitBody(r.Body)
	return w
}

// wireResponse is core.HTTPResponse with a readable body.
type wireResponse struct {
	Status     int               `json:"status"`
	Header     map[string]string `json:"header,omitempty"`
	Body       body              `json:"body,omitempty"`
	BodyBase64 []byte            `json:"body_base64,omitempty"`
}

func (w *wireResponse) response() *core.HTTPResponse {
	return &core.HTTPResponse{Status: w.Status, Header: w.Header, Body: w.Body.or(w.BodyBase64)}
}

func toWireResponse(r *core.HTTPResponse) *wireResponse {
	w := &wireResponse{Status: r.Status, Header: r.Header}
	w.Body, w.BodyBase64 = splitBody(r.Body)
	return w
}

// body is an HTTP body as a fixture holds it: a JSON object or array stands
// for its compact encoding, a JSON string for the string's bytes.
type body []byte

func (b body) or(alt []byte) []byte {
	if len(b) > 0 {
		return b
	}
	return alt
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *body) UnmarshalJSON(raw []byte) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case string(raw) == "null":
		*b = nil
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		*b = body(s)
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return err
		}
		*b = buf.Bytes()
	}
	return nil
}

// MarshalJSON implements json.Marshaler: compact JSON objects and arrays
// are written as JSON (the file's indentation is undone on reading), any
// other text as a string.
func (b body) MarshalJSON() ([]byte, error) {
	if compactJSON(b) {
		return b, nil
	}
	return marshal(string(b), "")
}

// splitBody chooses how a body is stored: readable when it is valid UTF-8,
// base64 when it is not.
func splitBody(b []byte) (body, []byte) {
	if len(b) == 0 {
		return nil, nil
	}
	if compactJSON(b) || utf8.Valid(b) {
		return body(b), nil
	}
	return nil, b
}

// compactJSON reports whether b is a JSON object or array that reads back
// byte for byte after indentation.
func compactJSON(b []byte) bool {
	if len(b) == 0 || (b[0] != '{' && b[0] != '[') {
		return false
	}
	var buf bytes.Buffer
	return json.Compact(&buf, b) == nil && bytes.Equal(buf.Bytes(), b)
}

// marshal encodes v without HTML escaping, indented when indent is set.
func marshal(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if indent == "" {
		return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
	}
	return buf.Bytes(), nil
}

// sourceDir is this package's directory in the source tree, where -update
// writes.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", errors.New("adaptertest: -update needs the source tree (is the test built with -trimpath?)")
	}
	return filepath.Dir(file), nil
}

func writeFixture(v any, elem ...string) error {
	dir, err := sourceDir()
	if err != nil {
		return err
	}
	b, err := marshal(v, "  ")
	if err != nil {
		return err
	}
	file := filepath.Join(append([]string{dir, "testdata"}, elem...)...)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return fmt.Errorf("adaptertest: writing %s: %w", file, err)
	}
	return nil
}

func writeDescribe(adapterName string, info *core.AdapterInfo) error {
	return writeFixture(info, adapterName, "describe.json")
}

func writeRequest(adapterName string, c RequestCase) error {
	f := requestFile{Name: c.Name, Note: c.Note, Request: c.Request, Want: toWireRequest(c.Want), WantError: c.WantError}
	return writeFixture(f, adapterName, "request", c.Name+".json")
}

func writeResponse(adapterName string, c ResponseCase) error {
	f := responseFile{Name: c.Name, Note: c.Note, Response: toWireResponse(c.Response), Want: c.Want}
	return writeFixture(f, adapterName, "response", c.Name+".json")
}
