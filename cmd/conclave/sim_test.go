package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `conclave sim` serves the simulated provider until it is told to stop.
func TestSimCommandServesUntilCancelled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"sim", "--addr", addr, "--api-key", "k-test", "--time-scale", "0.01"}, io.Discard, &stderr)
	}()
	body := `{"model":"atlas","messages":[{"role":"user","content":"What is 12 * 12?"}]}`
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest("POST", "http://"+addr+"/openai/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k-test")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode == 200 && strings.Contains(string(b), "144")
	}, 20*time.Second, 50*time.Millisecond)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("conclave sim did not stop")
	}
	err = run(context.Background(), []string{"sim", "--time-scale", "0"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "--time-scale must be positive")
}
