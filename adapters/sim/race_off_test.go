//go:build !race

package sim

// raceEnabled reports whether the race detector is on: it slows everything
// down several times and allows at most 8,128 live goroutines.
const raceEnabled = false
