package main

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
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/policies"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the conclave command once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "conclave-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "conclave")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// process is a running `conclave serve`.
type process struct {
	cmd      *exec.Cmd
	base     string // http://host:port
	operator chan string
	stdout   *safeLines
	stderr   *safeLines
	done     chan error
}

type safeLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *safeLines) add(l string) {
	s.mu.Lock()
	s.lines = append(s.lines, l)
	s.mu.Unlock()
}

func (s *safeLines) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

var (
	servingRe  = regexp.MustCompile(`Conclave is serving on (http://\S+)`)
	operatorRe = regexp.MustCompile(`"msg":"serving".*"operator_addr":"([^"]+)"`)
)

// serveArgs start `conclave serve` on free loopback ports, so that tests
// and replicas running together never compete for one.
var serveArgs = []string{"serve", "--addr", "127.0.0.1:0", "--operator-addr", "127.0.0.1:0"}

// startServe runs the binary with args and env, and waits until it prints
// its address.
func startServe(t testing.TB, dir string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binary(t), append(slices.Clone(serveArgs), args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return startProcess(t, cmd)
}

// startProcess starts cmd, a server that prints "Conclave is serving on
// URL" when it listens, and waits for that line. The process is killed at
// the end of the test unless it has exited.
func startProcess(t testing.TB, cmd *exec.Cmd) *process {
	t.Helper()
	outPipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{
		cmd: cmd, operator: make(chan string, 1),
		stdout: &safeLines{}, stderr: &safeLines{}, done: make(chan error, 1),
	}
	addr := make(chan string, 1)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			p.stdout.add(sc.Text())
			if m := servingRe.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.stderr.add(sc.Text())
			if m := operatorRe.FindStringSubmatch(sc.Text()); m != nil {
				p.operator <- m[1]
			}
		}
	}()
	go func() {
		readers.Wait()
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	select {
	case p.base = <-addr:
	case err := <-p.done:
		t.Fatalf("%s exited before serving: %v\nstderr:\n%s", cmd.Args, err, p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start\nstderr:\n%s", cmd.Args, p.stderr)
	}
	return p
}

// operatorBase is the base URL of the operator listener, as the serving
// log line names it ("" when it is off).
func (p *process) operatorBase(t testing.TB) string {
	t.Helper()
	select {
	case addr := <-p.operator:
		base := ""
		if addr != "off" {
			base = "http://" + addr
		}
		p.operator <- addr // for the next caller
		return base
	case <-time.After(10 * time.Second):
		t.Fatalf("no operator_addr in the serving log line\nstderr:\n%s", p.stderr)
		return ""
	}
}

var demoKeyRe = regexp.MustCompile(`(?m)^Demo key: (ccl_live_[A-Za-z0-9_-]{43})$`)

// demoKey waits for the banner's demo key line (after the "serving on"
// line startProcess waits for; the owner's set-up link follows it) and
// returns the key.
func (p *process) demoKey(t testing.TB) string {
	t.Helper()
	var key string
	require.Eventually(t, func() bool {
		if m := demoKeyRe.FindStringSubmatch(p.stdout.String()); m != nil {
			key = m[1]
		}
		return key != ""
	}, 10*time.Second, 10*time.Millisecond, "no demo key line in:\n%s", p.stdout)
	return key
}

// stop sends SIGTERM and requires a clean exit.
func (p *process) stop(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.done:
		require.NoError(t, err, "stderr:\n%s", p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("conclave serve did not stop\nstderr:\n%s", p.stderr)
	}
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	res, body := send(t, "GET", url, key, "")
	return res.StatusCode, body
}

// send sends one request, with key as its bearer when not "", and returns
// the answer and its body.
func send(t testing.TB, method, url, key, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestTwoReplicasStartTogetherOnOneDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	env := []string{"DATABASE_URL=" + url}
	var wg sync.WaitGroup
	procs := make([]*process, 2)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i] = startServe(t, t.TempDir(), env)
		}()
	}
	wg.Wait()
	for _, p := range procs {
		require.NotNil(t, p)
		status, body := get(t, p.base+"/readyz", "")
		require.Equal(t, 200, status, body)
		require.NotContains(t, p.stderr.String(), "migration", "no migration errors")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var applied, distinct int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&applied, &distinct))
	require.Equal(t, pgstore.LatestVersion(), applied, "each migration applied once")
	require.Equal(t, applied, distinct)
	for _, p := range procs {
		p.stop(t)
	}
}

func TestServeDemoKeyAndGracefulDrain(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + url}, "--demo")
	m := p.demoKey(t)
	status, body := get(t, p.base+"/v1/models", m)
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"id":"conclave-standard"`)
	require.Contains(t, body, `"id":"conclave-max"`)

	// The binary wires the engine, the tokenizer and the in-process
	// simulator: a chat completion is answered and billed.
	req, err := http.NewRequest("POST", p.base+"/v1/chat/completions",
		strings.NewReader(`{"model":"conclave-standard","messages":[{"role":"user","content":"What is 6 * 7?"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+m)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	chat, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, string(chat))
	require.Contains(t, string(chat), "42")
	require.Contains(t, string(chat), `"persisted":true`)

	// An in-flight request — its body still arriving — is drained, not cut,
	// when the process is told to stop.
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body = `{"model":"conclave-standard","messages":[{"role":"user","content":"Should we drain?"}]}`
	half := len(body) / 2
	_, err = fmt.Fprintf(conn, "POST /v1/estimate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", m, len(body), body[:half])
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // let the server start reading the body
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	time.Sleep(200 * time.Millisecond) // the server is now draining
	_, err = io.WriteString(conn, body[half:])
	require.NoError(t, err)
	res, err = http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, "the in-flight request completes")
	res.Body.Close()
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit after draining")
	}
	require.Contains(t, p.stderr.String(), `"msg":"stopped"`)

	// A restart reuses the demo organisation rather than making another.
	p2 := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + url}, "--demo")
	p2.demoKey(t)
	require.Contains(t, p2.stdout.String(), "Demo organisation DEMO")
	p2.stop(t)
}

// The worked example of docs/policies.md, end to end: a policy directory
// that opens conclave-max to the pro plan only replaces the embedded set.
func TestServePolicyDirReplacesTheEmbeddedPolicies(t *testing.T) {
	t.Parallel()
	// The policy author's copy of both policies: conclave-max limited to
	// the pro plan, and the word "official" reserved in mode names (the
	// worked examples of docs/policies.md).
	dir := t.TempDir()
	edit := func(file, from, to string) {
		src, err := policies.FS.ReadFile(file)
		require.NoError(t, err)
		edited := strings.Replace(string(src), from, to, 1)
		require.NotEqual(t, string(src), edited, "the worked example's line is in %s", file)
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(edited), 0o600))
	}
	edit("authz.rego", "plan_limited_modes := {}", `plan_limited_modes := {"conclave-max": {"pro"}}`)
	edit("modespec.rego", `reserved_words := {"conclave"}`, `reserved_words := {"conclave", "official"}`)

	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + pgtest.NewDatabase(t)}, "--demo", "--policy-dir", dir)
	key := p.demoKey(t)
	status, body := get(t, p.base+"/v1/models", key)
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"id":"conclave-standard"`)
	require.NotContains(t, body, `"id":"conclave-max"`)
	status, body = get(t, p.base+"/v1/models/CNCL:MAXX", key)
	require.Equal(t, 403, status, body)
	require.Contains(t, body, `"code":"mode_not_permitted"`)

	// A spec the embedded rules accept is refused by the tightened one,
	// with no rebuild, and nothing is saved.
	official := strings.Replace(panelSpec("sim/atlas"), "Acme Review Panel", "Official Review Panel", 1)
	v := jsonOf(t, "POST", p.base+"/v1/modes/validate", key, `{"spec":`+official+`}`, http.StatusOK)
	require.Equal(t, false, v["ok"])
	require.Equal(t, []any{map[string]any{"code": "name_reserved", "path": "name",
		"message": `The name "Official Review Panel" is reserved.`}}, v["refusals"])
	refused := jsonOf(t, "POST", p.base+"/v1/modes", key, `{"spec":`+official+`}`, http.StatusUnprocessableEntity)
	require.Equal(t, "mode_invalid", errorCode(t, refused))
	require.Empty(t, jsonOf(t, "GET", p.base+"/v1/modes", key, "", http.StatusOK)["data"])
	v = jsonOf(t, "POST", p.base+"/v1/modes/validate", key, `{"spec":`+panelSpec("sim/atlas")+`}`, http.StatusOK)
	require.Equal(t, true, v["ok"], "the rest of the rules are the embedded ones: %v", v)
	p.stop(t)
}

// The metrics name every engine with its calls and latencies: serve answers
// them on the operator listener only, and the public listener says 404.
// Nothing new is printed: scripts wait for the one "serving on" line.
func TestServeMetricsOnTheOperatorListenerOnly(t *testing.T) {
	t.Parallel()
	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + pgtest.NewDatabase(t)})
	require.Equal(t, "Conclave is serving on "+p.base, p.stdout.String())
	op := p.operatorBase(t)
	require.NotEmpty(t, op)
	require.NotEqual(t, p.base, op)

	status, body := get(t, p.base+"/readyz", "")
	require.Equal(t, 200, status, body)
	require.JSONEq(t, `{"status":"ready"}`, body)
	status, body = get(t, p.base+"/metrics", "")
	require.Equal(t, 404, status, body)
	require.NotContains(t, body, "go_goroutines", "paths outside the API are the pages': no metrics there")
	status, body = get(t, p.base+"/v1/metrics", "")
	require.Equal(t, 401, status, body)

	// A request's metrics are recorded just after its answer is sent.
	require.Eventually(t, func() bool {
		status, body = get(t, op+"/metrics", "")
		return status == 200 && strings.Contains(body, "go_goroutines ") &&
			strings.Contains(body, `conclave_http_requests_total{code="ok",route="/readyz",status="200"} 1`) &&
			strings.Contains(body, `conclave_http_requests_total{code="invalid_api_key",route="unmatched",status="401"} 1`)
	}, 10*time.Second, 20*time.Millisecond, "conclave_ and runtime series on the operator listener")
	status, body = get(t, op+"/readyz", "")
	require.Equal(t, 200, status, body)
	status, _ = get(t, op+"/v1/models", "")
	require.Equal(t, 404, status, "the operator listener serves no API")
	p.stop(t)
	require.Contains(t, p.stderr.String(), `"msg":"stopped"`)

	// "off" opens no operator listener.
	p = startServe(t, t.TempDir(), []string{"DATABASE_URL=" + pgtest.NewDatabase(t)}, "--operator-addr", "off")
	require.Empty(t, p.operatorBase(t))
	status, _ = get(t, p.base+"/metrics", "")
	require.Equal(t, 404, status)
	p.stop(t)
}

func TestServeManagesALocalClusterWhenNoDatabaseURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A short data directory keeps the Unix socket path under its limit.
	cfg := filepath.Join(dir, "conclave.yaml")
	dataDir, err := os.MkdirTemp("", "ccl")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dataDir, 0o755)) // the server may run as another OS user
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf("data_dir: %q\n", dataDir)), 0o600))
	p := startServe(t, dir, []string{"DATABASE_URL="}, "--config", cfg)
	status, body := get(t, p.base+"/readyz", "")
	require.Equal(t, 200, status, body)
	require.FileExists(t, filepath.Join(dataDir, "pg", "postmaster.pid"))
	p.stop(t)
	require.NoFileExists(t, filepath.Join(dataDir, "pg", "postmaster.pid"), "the managed cluster is stopped on shutdown")
}

func TestServeWithoutPostgresSaysWhatToDoInOneLine(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "CONCLAVE_PG_BIN="+empty)
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.NotZero(t, exit.ExitCode())
	require.Empty(t, out)
	msg := strings.TrimRight(string(exit.Stderr), "\n")
	require.NotContains(t, msg, "\n", "one line: %q", msg)
	require.Contains(t, msg, "install PostgreSQL")
	require.Contains(t, msg, "DATABASE_URL")
}

// On SIGTERM a replica takes no new calls and lets a running deliberation
// finish, bill and store its answer — here one whose caller has already
// left — before it exits.
func TestServeDrainsRunningDeliberationsOnSIGTERM(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + url}, "--demo")
	key := p.demoKey(t)

	// Every engine call takes 1.5 s: a deliberation of several seconds.
	body := `{"model":"conclave-standard","messages":[{"role":"user","content":` +
		`"Should we adopt trunk-based development? Compare the risks and recommend a strategy. [[sim: delay=1500ms]]"}]}`
	req, err := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	_, err = (&http.Client{Timeout: 700 * time.Millisecond}).Do(req)
	require.Error(t, err, "the caller left before the answer")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not exit after draining")
	}
	require.Contains(t, p.stderr.String(), `"deliberations":1`, "the drain waited for the running deliberation")
	require.Contains(t, p.stderr.String(), `"msg":"stopped"`)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var receipts, live int
	var billed int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(billed_micros), 0) FROM receipts").Scan(&receipts, &billed))
	require.Equal(t, 1, receipts, "the deliberation finished and was stored")
	require.Positive(t, billed, "and billed")
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM holds WHERE state = 'held'").Scan(&live))
	require.Zero(t, live, "no hold is left behind")
}

// The configured repeat wait reaches the call service as it reads it: 0s
// (off) becomes a negative wait, anything else passes through.
func TestRepeatWaitFromTheConfiguration(t *testing.T) {
	require.Negative(t, repeatWait(0))
	require.Equal(t, 20*time.Second, repeatWait(20*time.Second))
}

// A configuration without judges (judges: [], as the benchmarks write it)
// starts the server, with a warning in the log: calls are served, and test
// runs and certifications, over REST and MCP alike, are refused at launch
// with provider_unavailable naming the judges, charging nothing; a dry run
// still quotes.
func TestServeStartsWithoutJudges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "conclave.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("judges: []\n"), 0o600))
	env := []string{"DATABASE_URL=" + pgtest.NewDatabase(t)}
	p := startServe(t, dir, env, "--config", cfg)
	status, body := get(t, p.base+"/readyz", "")
	require.Equal(t, 200, status, body)
	require.Contains(t, p.stderr.String(), "the configuration names no engine for them")

	_, key := listedMode(t, env, p.base)
	const named = "The judges nova_pro, mistral_large and llama4_maverick are not configured on this server"
	for path, launch := range map[string]string{
		"/v1/tests":   `{"model":"acme-panl","buckets":{"light":1}}`,
		"/v1/certify": `{"model":"acme-panl"}`,
	} {
		e := jsonOf(t, "POST", p.base+path, key, launch, http.StatusConflict)
		require.Equal(t, "provider_unavailable", errorCode(t, e), path)
		require.Equal(t, "judges", e["error"].(map[string]any)["param"], path)
		require.Contains(t, e["error"].(map[string]any)["message"], named, path)
	}
	q := jsonOf(t, "POST", p.base+"/v1/tests", key, `{"model":"acme-panl","buckets":{"light":1},"dry_run":true}`, http.StatusOK)
	require.Equal(t, true, q["dry_run"], "%v", q)
	r := (&oauthGateway{origin: p.base}).call(t, key, "run_test", map[string]any{"model": "acme-panl", "questions": map[string]any{"easy": 1}})
	require.Equal(t, "provider_unavailable", toolError(t, r), r.raw)
	require.Contains(t, r.raw, named)
	p.stop(t)
}

// With server.h2c the public listener also speaks HTTP/2 with prior
// knowledge, as a proxy in front that multiplexes its calls sends it: a
// billed chat completion and a health check are answered over HTTP/2 on
// one connection, and HTTP/1.1 still is. The operator listener (a server
// without the setting) refuses the HTTP/2 preface.
func TestServeSpeaksH2CWhenTold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "conclave.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("server:\n  h2c: true\n"), 0o600))
	p := startServe(t, dir, []string{"DATABASE_URL=" + pgtest.NewEmptyDatabase(t)}, "--config", cfg, "--demo")
	defer p.stop(t)
	key := p.demoKey(t)

	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &protocols}, Timeout: time.Minute}
	defer h2c.CloseIdleConnections()
	req, err := http.NewRequest("POST", p.base+"/v1/chat/completions",
		strings.NewReader(chatRequestBody("conclave-standard", "What is 2 + 2?")))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := h2c.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(raw))
	require.Equal(t, 2, res.ProtoMajor, "the chat completion over HTTP/2")
	var answer struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(raw, &answer))
	require.Len(t, answer.Choices, 1)
	require.NotEmpty(t, answer.Choices[0].Message.Content)

	res, err = h2c.Get(p.base + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 2, res.ProtoMajor)

	res, body := send(t, "GET", p.base+"/healthz", "", "")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Equal(t, 1, res.ProtoMajor, "HTTP/1.1 still served")

	_, err = h2c.Get(p.operatorBase(t) + "/healthz")
	require.Error(t, err, "the operator listener speaks HTTP/1.1 only")
}

// conclave_calls_in_flight, on the operator listener, counts the billed
// calls running on the replica: one while a slow call deliberates, none
// once it has answered.
func TestServeCountsCallsInFlight(t *testing.T) {
	t.Parallel()
	p := startServe(t, t.TempDir(), []string{"DATABASE_URL=" + pgtest.NewEmptyDatabase(t)}, "--demo")
	defer p.stop(t)
	key, op := p.demoKey(t), p.operatorBase(t)
	inFlight := func() string {
		_, body := get(t, op+"/metrics", "")
		for line := range strings.Lines(body) {
			if v, ok := strings.CutPrefix(line, "conclave_calls_in_flight "); ok {
				return strings.TrimSpace(v)
			}
		}
		return "absent"
	}
	require.Equal(t, "0", inFlight())

	req, err := http.NewRequest("POST", p.base+"/v1/chat/completions",
		strings.NewReader(chatRequestBody("conclave-standard", "Should we rewrite the billing service in Rust? [[sim: delay=3s]]")))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	type answer struct {
		status int
		err    error
	}
	answered := make(chan answer, 1)
	go func() { // no test assertions off the test's goroutine
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		answered <- answer{status: res.StatusCode, err: err}
	}()
	require.Eventually(t, func() bool { return inFlight() == "1" }, 10*time.Second, 20*time.Millisecond,
		"the slow call counted while it runs")
	a := <-answered
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "0", inFlight(), "settled: no longer in flight")
}

// TestServePacesTheCollectorByTheHeapFloor reads the collector's settings
// from the operator listener's Go metrics: with server.heap_floor_mib at
// 512, far above serve's live heap, GOGC is raised and the target sits at
// the floor; at 0, GOGC is its own 100 and the target a small multiple of
// the live heap. Beside them it reports what says where its memory goes:
// the live heap, the stacks in use and a new goroutine's stack.
func TestServePacesTheCollectorByTheHeapFloor(t *testing.T) {
	t.Parallel()
	gauge := func(body, name string) float64 {
		for line := range strings.Lines(body) {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				require.NoError(t, err, line)
				return f
			}
		}
		t.Fatalf("no %s in the operator's metrics", name)
		return 0
	}
	const mib = 1 << 20
	for _, floor := range []int{512, 0} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "conclave.yaml")
		require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, "server:\n  heap_floor_mib: %d\n", floor), 0o600))
		p := startServe(t, dir, []string{"DATABASE_URL=" + pgtest.NewEmptyDatabase(t), "GOGC="}, "--config", cfg)
		_, body := get(t, p.operatorBase(t)+"/metrics", "")
		gogc, goal := gauge(body, "go_gc_gogc_percent"), gauge(body, "go_memstats_next_gc_bytes")
		if floor > 0 {
			require.Greater(t, gogc, 100.0, "GOGC under a 512 MiB floor")
			require.InDelta(t, 512*mib, goal, 32*mib, "the collector's target under a 512 MiB floor (GOGC %.0f, live %.0f, stacks %.0f, globals %.0f bytes)", gogc,
				gauge(body, "go_gc_heap_live_bytes"), gauge(body, "go_gc_scan_stack_bytes"), gauge(body, "go_gc_scan_globals_bytes"))
		} else {
			require.Equal(t, 100.0, gogc, "GOGC without a floor")
			require.Less(t, goal, 256.0*mib, "the collector's target without a floor")
		}
		live, stacks, start := gauge(body, "go_gc_heap_live_bytes"), gauge(body, "go_gc_scan_stack_bytes"), gauge(body, "go_gc_stack_starting_size_bytes")
		require.Positive(t, live, "the live heap")
		require.Less(t, live, goal, "the live heap under the collector's target")
		require.Positive(t, stacks, "the stacks in use at the last collection")
		require.GreaterOrEqual(t, start, 2048.0, "a new goroutine's stack: at least the runtime's smallest")
		require.Zero(t, int(start)&(int(start)-1), "a new goroutine's stack: a power of two")
		p.stop(t)
	}
}
