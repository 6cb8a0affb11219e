// Package logtest holds what tests need to read the logs of code that
// writes them from several goroutines.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe for concurrent writes, whose String is safe to
// call while writes go on: a log sink for tests.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
