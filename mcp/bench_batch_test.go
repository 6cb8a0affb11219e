package mcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/mcp"
)

// batchBodies are the batches that make the largest answers a body of
// size bytes can cause, by name: the answers that run are as large as they
// can be (tools/list, about 25 kB each), and the rest of the body is as
// many requests as fit, each answered batch_too_large; or every element
// carries the longest id an answer echoes.
func batchBodies(size int) map[string][]byte {
	fill := func(head []string, elem func(i int) string) []byte {
		var b bytes.Buffer
		b.WriteString("[")
		for i, h := range head {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(h)
		}
		for i := len(head); ; i++ {
			e := elem(i)
			if b.Len()+len(e)+2 > size {
				break
			}
			if b.Len() > 1 {
				b.WriteString(",")
			}
			b.WriteString(e)
		}
		b.WriteString("]")
		return b.Bytes()
	}
	var lists []string
	for i := range 64 {
		lists = append(lists, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i))
	}
	id := strings.Repeat("i", 120)
	return map[string][]byte{
		"tools_list": fill(nil, func(i int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i) }),
		"lists_then_pings": fill(lists, func(i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i%10)
		}),
		"long_ids": fill(nil, func(i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s%05d","method":"ping"}`, id, i%100000)
		}),
	}
}

// batchWorstCase is what the tool server does with the worst batches of a
// body of size bytes: the largest answer any of them causes (every
// request in it answered), and the peak of the process's live heap above
// idle while parallel copies of the body with that answer are answered at
// once.
type batchWorstCase struct {
	largest     int    // bytes of the largest answer
	largestName string // the body that caused it
	requests    int    // requests in that body, each answered
	peakAbove   uint64 // bytes of heap above idle at the peak
}

func measureBatchWorstCase(t testing.TB, size, parallel int) batchWorstCase {
	t.Helper()
	tb := setup(t, func(o *setupOpts) { o.rpm = 100_000_000 })
	post := func(body []byte, sink io.Writer) int {
		req, err := http.NewRequest(http.MethodPost, tb.base+mcp.Path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tb.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		n, err := io.Copy(sink, res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		return int(n)
	}
	var w batchWorstCase
	for name, body := range batchBodies(size) {
		var requests []json.RawMessage
		require.NoError(t, json.Unmarshal(body, &requests))
		var answer bytes.Buffer
		n := post(body, &answer)
		var answers []rpcResponse
		require.NoError(t, json.Unmarshal(answer.Bytes(), &answers), "%s: the answer is not a JSON array", name)
		require.Len(t, answers, len(requests), "%s: every request is answered", name)
		if n > w.largest {
			w.largest, w.largestName, w.requests = n, name, len(requests)
		}
	}
	body := batchBodies(size)[w.largestName]
	runtime.GC()
	idle := liveHeap()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if h := liveHeap(); h > peak.Load() {
				peak.Store(h)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() { post(body, io.Discard) })
	}
	wg.Wait()
	close(stop)
	<-sampled
	if p := peak.Load(); p > idle {
		w.peakAbove = p - idle
	}
	return w
}

// liveHeap is the bytes of heap objects, live or not yet swept, after a
// collection when asked at idle; read without stopping the world.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkBatchWorstCase measures the largest answer one 1 MiB request
// can cause, and the tool server's peak heap above idle while 8 such
// requests are answered at once (goal: under 64 MiB).
func BenchmarkBatchWorstCase(b *testing.B) {
	var w batchWorstCase
	for range b.N {
		w = measureBatchWorstCase(b, 1<<20, 8)
	}
	b.ReportMetric(float64(w.largest)/(1<<20), "largest_answer_MiB")
	b.ReportMetric(float64(w.requests), "requests_in_it")
	b.ReportMetric(float64(w.peakAbove)/(1<<20), "peak_heap_above_idle_MiB")
	b.ReportMetric(64, "goal_peak_MiB")
	b.Logf("largest answer: %d bytes, from the %s body of %d requests; peak heap %.1f MiB above idle (goal < 64 MiB)",
		w.largest, w.largestName, w.requests, float64(w.peakAbove)/(1<<20))
}

// The worst-case measurement in its smoke form: a 64 KiB body, two at
// once. Every request of each worst body is answered and the answer is
// bounded by its documented figure: the run answers' budget plus a short
// refusal (under 600 bytes with the longest id) for each other request.
func TestBatchWorstCaseSmoke(t *testing.T) {
	t.Parallel()
	w := measureBatchWorstCase(t, 64<<10, 2)
	require.Positive(t, w.requests)
	require.LessOrEqual(t, w.largest, 4<<20+w.requests*600)
	t.Logf("largest answer %d bytes (%s, %d requests); peak heap %d bytes above idle", w.largest, w.largestName, w.requests, w.peakAbove)
}
