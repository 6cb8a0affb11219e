package wasmhost_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/plugins/manifest"
)

// This file assembles small WebAssembly modules by hand: guests that break
// the ABI in ways a Go guest built with plugins/wasmguest cannot, and that
// compile in microseconds.

// Value types and opcodes used below.
const (
	tI32 = 0x7f
	tI64 = 0x7e

	opUnreachable = 0x00
	opI32Const    = 0x41
	opI64Const    = 0x42
	opEnd         = 0x0b
	opLocalGet    = 0x20
	opI32Eq       = 0x46
	opIf          = 0x04
	blockEmpty    = 0x40
)

// rawFunc is one exported function.
type rawFunc struct {
	params, results []byte
	body            []byte // instructions, without the final end
}

// rawModule is a module with one memory of memPages pages exported as
// "memory", the given functions exported under their names, data segments
// by offset, and function imports.
type rawModule struct {
	memPages uint32
	funcs    map[string]rawFunc
	data     map[uint32]string
	imports  [][2]string // module, name; each of type () -> ()
}

// Fixed addresses in a raw module's memory.
const (
	rawVersionAt  = 16
	rawKindAt     = 32
	rawEnvelopeAt = 64
	rawAllocAt    = 4096
)

const rawEnvelope = `{"ok":{"name":"raw","version":"1","auth":"none"}}`

// rawAdapter returns a well-behaved adapter module; tests change its maps.
func rawAdapter() rawModule {
	return rawModule{
		memPages: 1,
		data: map[uint32]string{
			rawVersionAt:  "seat-abi/1",
			rawKindAt:     "adapter",
			rawEnvelopeAt: rawEnvelope,
		},
		funcs: map[string]rawFunc{
			"_initialize":    {},
			"abi_version":    {results: []byte{tI64}, body: i64Const(packed(rawVersionAt, len("seat-abi/1")))},
			"kind":           {results: []byte{tI64}, body: i64Const(packed(rawKindAt, len("adapter")))},
			"alloc":          {params: []byte{tI32}, results: []byte{tI32}, body: i32Const(rawAllocAt)},
			"free":           {params: []byte{tI32}},
			"describe":       returning(packed(rawEnvelopeAt, len(rawEnvelope))),
			"build_request":  returning(packed(rawEnvelopeAt, len(rawEnvelope))),
			"parse_response": returning(packed(rawEnvelopeAt, len(rawEnvelope))),
		},
	}
}

func packed(ptr uint32, n int) uint64 { return uint64(ptr)<<32 | uint64(n) }

// returning is a method export that returns v.
func returning(v uint64) rawFunc {
	return rawFunc{params: []byte{tI32, tI32}, results: []byte{tI64}, body: i64Const(v)}
}

func i32Const(v int32) []byte  { return append([]byte{opI32Const}, sleb(int64(v))...) }
func i64Const(v uint64) []byte { return append([]byte{opI64Const}, sleb(int64(v))...) }

// trap is a function body that traps.
var trap = []byte{opUnreachable}

// trapIfArgIs is the body of a one-i32 function that traps when its
// argument is v.
func trapIfArgIs(v int32) []byte {
	b := []byte{opLocalGet, 0}
	b = append(b, i32Const(v)...)
	return append(b, opI32Eq, opIf, blockEmpty, opUnreachable, opEnd)
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func vec(items ...[]byte) []byte {
	b := uleb(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func name(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
}

// bytes encodes the module.
func (m rawModule) bytes() []byte {
	names := make([]string, 0, len(m.funcs))
	for n := range m.funcs {
		names = append(names, n)
	}
	slices.Sort(names)

	// Type 0 is () -> () for imports; each function gets its own type after.
	types := [][]byte{{0x60, 0, 0}}
	var funcIdx, exports, codes [][]byte
	for i, n := range names {
		f := m.funcs[n]
		types = append(types, append(append([]byte{0x60}, vec(splitBytes(f.params)...)...), vec(splitBytes(f.results)...)...))
		funcIdx = append(funcIdx, uleb(uint64(i+1)))
		exports = append(exports, append(name(n), append([]byte{0x00}, uleb(uint64(len(m.imports)+i))...)...))
		body := append(vec(), append(slices.Clone(f.body), opEnd)...) // no locals
		codes = append(codes, append(uleb(uint64(len(body))), body...))
	}
	exports = append(exports, append(name("memory"), 0x02, 0x00))
	var imports [][]byte
	for _, im := range m.imports {
		imports = append(imports, append(append(name(im[0]), name(im[1])...), 0x00, 0x00))
	}
	offsets := make([]uint32, 0, len(m.data))
	for off := range m.data {
		offsets = append(offsets, off)
	}
	slices.Sort(offsets)
	var data [][]byte
	for _, off := range offsets {
		seg := append([]byte{0x00}, i32Const(int32(off))...)
		seg = append(seg, opEnd)
		data = append(data, append(seg, name(m.data[off])...))
	}

	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, vec(types...))...)
	if len(imports) > 0 {
		out = append(out, section(2, vec(imports...))...)
	}
	out = append(out, section(3, vec(funcIdx...))...)
	out = append(out, section(5, vec(append([]byte{0x00}, uleb(uint64(m.memPages))...)))...)
	out = append(out, section(7, vec(exports...))...)
	out = append(out, section(10, vec(codes...))...)
	out = append(out, section(11, vec(data...))...)
	return out
}

func splitBytes(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// rawEntry writes m to a temporary file and returns a manifest entry
// pinning it.
func rawEntry(t *testing.T, pluginName string, m rawModule) *manifest.Entry {
	t.Helper()
	return rawEntryTB(t, pluginName, m)
}

func rawEntryTB(t testing.TB, pluginName string, m rawModule) *manifest.Entry {
	t.Helper()
	b := m.bytes()
	p := filepath.Join(t.TempDir(), pluginName+".wasm")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	sum := sha256.Sum256(b)
	return &manifest.Entry{Name: pluginName, Kind: manifest.KindAdapter, Carrier: manifest.CarrierWasm, Path: p, SHA256: hex.EncodeToString(sum[:])}
}
