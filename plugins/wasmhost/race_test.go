//go:build race

package wasmhost_test

// raceEnabled: the race detector instruments wazero's compiler, which then
// takes ten times as long on each module.
const raceEnabled = true
