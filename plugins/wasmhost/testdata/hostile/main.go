//go:build wasip1

// Command hostile is a test guest for plugins/wasmhost: an adapter whose
// behaviour the SeatRequest's model chooses, from a well-behaved echo to
// everything a sandbox must contain.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeAdapter(hostile{}) }

func main() {}

type hostile struct{}

// Snoop is what the "snoop" model found; the test decodes it from the body.
type Snoop struct {
	File     string   `json:"file"`
	FileErr  string   `json:"file_err"`
	Dir      []string `json:"dir"`
	Environ  []string `json:"environ"`
	Home     string   `json:"home"`
	Canary   string   `json:"canary"`
	Args     []string `json:"args"`
	Now      string   `json:"now"`
	Hostname string   `json:"hostname"`
}

var keep [][]byte

func (hostile) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: "hostile", Version: "1", Auth: core.AuthBearer}, nil
}

func (hostile) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	switch req.Model {
	case "loop":
		//lint:ignore SA5002 spinning forever is the point
		for {
		}
	case "membomb":
		for {
			b := make([]byte, 8<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	case "panic":
		panic("hostile guest panics")
	case "exit":
		os.Exit(3)
	case "fail":
		return nil, errors.New("refused on purpose")
	case "snoop":
		var s Snoop
		b, err := os.ReadFile("/etc/passwd")
		s.File = string(b)
		if err != nil {
			s.FileErr = err.Error()
		}
		if entries, err := os.ReadDir("/"); err == nil {
			for _, e := range entries {
				s.Dir = append(s.Dir, e.Name())
			}
		}
		s.Environ = os.Environ()
		s.Home = os.Getenv("HOME")
		s.Canary = os.Getenv("CONCLAVE_WASM_CANARY")
		s.Args = os.Args
		s.Now = time.Now().UTC().Format(time.RFC3339)
		s.Hostname, _ = os.Hostname()
		body, _ := json.Marshal(s)
		return &core.HTTPRequest{Method: "POST", Path: "/snoop", Body: body}, nil
	case "auth":
		return &core.HTTPRequest{Method: "POST", Path: "/v1/chat", Header: map[string]string{
			"Authorization": "Bearer sk-planted-by-guest",
		}}, nil
	case "large": // 128 KiB: over the output cap the tests set, well under the memory cap
		return &core.HTTPRequest{Method: "POST", Path: "/large", Header: map[string]string{
			"X-Large": strings.Repeat("a", 128<<10),
		}}, nil
	case "huge": // ~100 MB
		return &core.HTTPRequest{Method: "POST", Path: "/huge", Body: make([]byte, 100<<20)}, nil
	case "log":
		for i := range 100 {
			wasmguest.Log(fmt.Sprintf("message %d", i))
		}
		fmt.Println("to stdout")
		fmt.Fprintln(os.Stderr, "to stderr")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return &core.HTTPRequest{Method: "POST", Path: "/echo", Header: map[string]string{"Content-Type": "application/json"}, Body: body}, nil
}

func (hostile) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res.Status != 200 {
		return &core.SeatAnswer{Error: &core.ProviderError{Class: core.ErrorBadRequest, Message: "status", Status: res.Status}}, nil
	}
	return &core.SeatAnswer{Text: string(res.Body), InputTokens: 1, OutputTokens: len(res.Body), Finish: core.FinishStop}, nil
}
