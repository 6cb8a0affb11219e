//go:build !race

package wasmhost_test

const raceEnabled = false
