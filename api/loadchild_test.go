package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A load generator in a child process of the test binary, for
// BenchmarkChatCPU and BenchmarkTracingCost: a gateway's callers run on
// other machines, so the gateway's figure should not carry their HTTP
// work, as it does not carry the simulator's (simchild_test.go). The child
// is the test binary itself, run with loadChildEnv set to its
// configuration (TestMain hands it to runLoadChild). It reads commands
// from its standard input, one a line: "<phase> <n>" sends n chat
// completions of that phase one at a time and answers "ok", or
// "error <why>" at the first answer that is not the phase's; it ends when
// its standard input closes.

// loadChildEnv holds the child's configuration (loadChildConfig, JSON).
const loadChildEnv = "CONCLAVE_API_LOAD_CHILD"

// loadChildConfig is the gateway the child calls, with what key, and its
// phases by name.
type loadChildConfig struct {
	URL    string               `json:"url"`
	Key    string               `json:"key"`
	Phases map[string]loadPhase `json:"phases"`
}

// loadPhase is one kind of call: its request body, and the lane and rounds
// its answer's panel must report.
type loadPhase struct {
	Body   string  `json:"body"`
	Lane   string  `json:"lane"`
	Rounds float64 `json:"rounds"`
}

// runLoadChild is the child: it never returns.
func runLoadChild() {
	var c loadChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(loadChildEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, "load child:", err)
		os.Exit(2)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(c.run(client, in.Text()))
	}
	os.Exit(0)
}

// run carries out one command and says how it went.
func (c *loadChildConfig) run(client *http.Client, command string) string {
	name, count, _ := strings.Cut(command, " ")
	p, ok := c.Phases[name]
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 0 {
		return fmt.Sprintf("error bad command %q", command)
	}
	for range n {
		status, panel, err := postChat(context.Background(), client, c.URL, c.Key, p.Body)
		switch {
		case err != nil || status != 200:
			return fmt.Sprintf("error %s: status %d: %v", name, status, err)
		case panel.Lane != p.Lane || panel.Rounds != p.Rounds:
			return fmt.Sprintf("error %s: lane %v, rounds %v: want %s, %v", name, panel.Lane, panel.Rounds, p.Lane, p.Rounds)
		}
	}
	return "ok"
}

// chatPhases are the calls BenchmarkChatCPU and BenchmarkTracingCost
// measure: a two-round panel (10 model calls) and the billed express call
// (classifier and one seat).
func chatPhases() map[string]loadPhase {
	return map[string]loadPhase{
		"deliberation": {Body: chatBody(benchTwoRoundsMode, "Should a twelve-person team split its monolith into microservices this year?", ""), Lane: "panel", Rounds: 2},
		"express":      {Body: chatBody("conclave-standard", "What is 2 + 2?", ""), Lane: "express", Rounds: 1},
	}
}

// loadChild is a running load generator.
type loadChild struct {
	in  io.Writer
	out *bufio.Reader
}

// startLoadChild starts a load generator calling cb's gateway with its
// key, in the given phases, and stops it when the benchmark ends.
func startLoadChild(b *testing.B, cb *chatBench, phases map[string]loadPhase) *loadChild {
	b.Helper()
	in, out := startChild(b, loadChildEnv, loadChildConfig{URL: cb.srv.URL, Key: cb.key, Phases: phases})
	return &loadChild{in: in, out: out}
}

// run has the child send n calls of phase, one at a time, and waits until
// it has; it fails b if one did not answer as the phase should.
func (c *loadChild) run(b *testing.B, phase string, n int) {
	b.Helper()
	if _, err := fmt.Fprintf(c.in, "%s %d\n", phase, n); err != nil {
		b.Fatal(err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		b.Fatalf("the load child stopped: %v", err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		b.Fatalf("the load child: %s", line)
	}
}
