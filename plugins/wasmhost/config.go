package wasmhost

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"
)

// Config configures a Host. The zero value is usable: WithDefaults fills in
// every unset field.
type Config struct {
	// CacheDir is a directory where compiled modules are kept across
	// restarts, keyed by the module's bytes and the wazero version. The host
	// owns it; nothing else should write there. Defaults to "", an in-memory
	// cache that lasts as long as the Host.
	CacheDir string
	// PoolSize is the most instances of one module that exist at once, and
	// so the most calls into it that run at once; further calls wait.
	// Defaults to runtime.NumCPU().
	PoolSize int
	// MemoryLimitPages caps each instance's linear memory, in 64 KiB pages.
	// A Go wasip1 module starts at 3 MiB, is at 4.5 MiB once initialised,
	// and a built-in adapter needs about 6 MiB for a 2 KB translate; the cap
	// must leave room for the largest input and result, several times over.
	// At most 65536 (4 GiB). Defaults to 1024 (64 MiB).
	MemoryLimitPages uint32
	// CallTimeout bounds one call into an instance, and separately the
	// creation of an instance. The caller's context may cut it shorter.
	// Defaults to 5s.
	CallTimeout time.Duration
	// MaxOutputBytes is the largest result the host copies out of an
	// instance; a larger one fails the call with ErrOutputTooLarge.
	// Defaults to 8 MiB.
	MaxOutputBytes int
	// Logger receives the host's own messages, what plugins send through
	// conclave.log (at info), and what they write to stdout and stderr (at
	// debug), all capped. Defaults to a logger that discards everything.
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultMemoryLimitPages = 1024
	DefaultCallTimeout      = 5 * time.Second
	DefaultMaxOutputBytes   = 8 << 20
)

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.PoolSize == 0 {
		c.PoolSize = runtime.NumCPU()
	}
	if c.MemoryLimitPages == 0 {
		c.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.PoolSize < 1:
		return fmt.Errorf("wasmhost: Config.PoolSize: %d is not a positive number of instances", c.PoolSize)
	case c.MemoryLimitPages > 65536:
		return fmt.Errorf("wasmhost: Config.MemoryLimitPages: %d is more than 65536 pages (4 GiB)", c.MemoryLimitPages)
	case c.CallTimeout < 0:
		return fmt.Errorf("wasmhost: Config.CallTimeout: %v is negative", c.CallTimeout)
	case c.MaxOutputBytes < 1:
		return fmt.Errorf("wasmhost: Config.MaxOutputBytes: %d is not a positive size", c.MaxOutputBytes)
	}
	return nil
}
