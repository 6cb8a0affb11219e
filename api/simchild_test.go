package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conclavehq/conclave/adapters/sim"
)

// A simulated provider in a child process of the test binary, for the
// benchmarks that count this process's CPU: a real provider runs on
// another machine, so the gateway's figure should not carry the
// simulator's work. The child is the test binary itself, run with
// simChildEnv set to its configuration (TestMain hands it to runSimChild):
// it prints the simulator's URL and its own stats URL, and serves until
// its standard input closes.

const (
	// simChildEnv holds the child's configuration (simChildConfig, JSON).
	simChildEnv = "CONCLAVE_API_SIM_CHILD"
	// simChildKeyEnv holds the key the child's simulator requires; the
	// engines' credential names it.
	simChildKeyEnv = "CONCLAVE_API_SIM_KEY"
)

// simChildConfig is what the child takes of a sim.Config.
type simChildConfig struct {
	TimeScale float64                      `json:"time_scale"`
	Engines   map[string]sim.EngineProfile `json:"engines"`
	Key       string                       `json:"key"`
}

// simChild is a running child simulator.
type simChild struct {
	url, stats, key string
}

// simChildStats is what the child's stats URL answers: the simulator's
// model calls so far and the child's CPU time (user + system).
type simChildStats struct {
	Calls int           `json:"calls"`
	CPU   time.Duration `json:"cpu_ns"`
}

// runSimChild is the child: it never returns.
func runSimChild() {
	var c simChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(simChildEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, "sim child:", err)
		os.Exit(2)
	}
	srv, err := sim.Start(context.Background(), sim.Config{TimeScale: c.TimeScale, Engines: c.Engines, APIKey: c.Key})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim child:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim child:", err)
		os.Exit(2)
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			_ = json.NewEncoder(w).Encode(simChildStats{Calls: srv.Stats().Total(),
				CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())})
		}))
	}()
	fmt.Printf("%s http://%s\n", srv.URL(), ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
	os.Exit(0)
}

// startSimChild starts a child simulator configured as cfg (its time
// scale and engine profiles) and stops it when the benchmark ends.
func startSimChild(b *testing.B, cfg sim.Config) *simChild {
	b.Helper()
	c := simChildConfig{TimeScale: cfg.TimeScale, Engines: cfg.Engines, Key: "k-" + fmt.Sprint(time.Now().UnixNano())}
	_, stdout := startChild(b, simChildEnv, c)
	line, err := stdout.ReadString('\n')
	if err != nil {
		b.Fatalf("the child simulator did not start: %v", err)
	}
	urls := strings.Fields(line)
	if len(urls) != 2 {
		b.Fatalf("the child simulator said %q", line)
	}
	return &simChild{url: urls[0], stats: urls[1], key: c.Key}
}

// startChild starts the test binary as a child process with env set to
// config in JSON (TestMain hands the child to its role), and returns its
// standard input and output. When b ends it closes the child's standard
// input, which asks it to stop, and kills it if it has not stopped 10 s
// later.
func startChild(b *testing.B, env string, config any) (io.Writer, *bufio.Reader) {
	b.Helper()
	raw, err := json.Marshal(config)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return stdin, bufio.NewReader(stdout)
}

// read asks the child for its stats.
func (c *simChild) read(b *testing.B) simChildStats {
	b.Helper()
	res, err := http.Get(c.stats)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var s simChildStats
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		b.Fatal(err)
	}
	return s
}
