package manifest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/plugins/manifest"
)

func TestLoadVerifyAndTamper(t *testing.T) { // not parallel: it changes directory
	dir := t.TempDir()
	plugin := filepath.Join(dir, "a.wasm")
	require.NoError(t, os.WriteFile(plugin, []byte("module bytes"), 0o600))
	sum, err := manifest.Digest(plugin)
	require.NoError(t, err)
	path := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(path, []byte("plugins:\n  - {name: a, kind: adapter, carrier: wasm, path: a.wasm, sha256: "+sum+"}\n"), 0o600))

	m, err := manifest.Load(path)
	require.NoError(t, err)
	e, ok := m.Get("a")
	require.True(t, ok)
	require.Equal(t, plugin, e.Path, "relative paths resolve against the manifest")

	// A manifest named by a relative path still yields absolute plugin paths.
	t.Chdir(dir)
	rel, err := manifest.Load("plugins.yaml")
	require.NoError(t, err)
	re, _ := rel.Get("a")
	require.True(t, filepath.IsAbs(re.Path), re.Path)
	require.NoError(t, e.Verify())
	b, err := e.ReadVerified()
	require.NoError(t, err)
	require.Equal(t, "module bytes", string(b))

	require.NoError(t, os.WriteFile(plugin, []byte("tampered"), 0o600))
	require.ErrorIs(t, e.Verify(), manifest.ErrDigestMismatch)
	_, err = e.ReadVerified()
	require.ErrorIs(t, err, manifest.ErrDigestMismatch)
}

func TestParseErrorsNameTheField(t *testing.T) {
	t.Parallel()
	good := "0000000000000000000000000000000000000000000000000000000000000000"
	for yaml, want := range map[string]string{
		"plugins:\n  - {name: A, kind: adapter, carrier: wasm, path: x, sha256: " + good + "}":                                                                             "plugins[0].name",
		"plugins:\n  - {name: a, kind: judge, carrier: wasm, path: x, sha256: " + good + "}":                                                                               "plugins[0].kind",
		"plugins:\n  - {name: a, kind: adapter, carrier: dll, path: x, sha256: " + good + "}":                                                                              "plugins[0].carrier",
		"plugins:\n  - {name: a, kind: adapter, carrier: wasm, sha256: " + good + "}":                                                                                      "plugins[0].path",
		"plugins:\n  - {name: a, kind: adapter, carrier: wasm, path: x, sha256: abc}":                                                                                      "plugins[0].sha256",
		"plugins:\n  - {name: a, kind: adapter, carrier: wasm, path: x, sha256: " + good + "}\n  - {name: a, kind: adapter, carrier: wasm, path: y, sha256: " + good + "}": "plugins[1].name",
	} {
		_, err := manifest.Parse([]byte(yaml), "/")
		require.ErrorContains(t, err, want)
	}
}

func TestAdapterFor(t *testing.T) {
	t.Parallel()
	good := "0000000000000000000000000000000000000000000000000000000000000000"
	m, err := manifest.Parse([]byte(`plugins:
  - {name: openai-wasm, kind: adapter, carrier: wasm, path: openai.wasm, sha256: `+good+`}
  - {name: direct-wasm, kind: protocol, carrier: wasm, path: direct.wasm, sha256: `+good+`}
`), "/plugins")
	require.NoError(t, err)
	m.Path = "plugins.yaml"

	e, err := m.AdapterFor(manifest.CarrierWasm, "openai-wasm")
	require.NoError(t, err)
	require.Equal(t, "openai-wasm", e.Name)

	for name, c := range map[string]struct{ carrier, plugin, want string }{
		"not listed":    {manifest.CarrierWasm, "gemini-wasm", `plugin "gemini-wasm" is not in the manifest plugins.yaml`},
		"other carrier": {manifest.CarrierGoPlugin, "openai-wasm", `plugin "openai-wasm" is a wasm adapter, not a goplugin adapter`},
		"a protocol":    {manifest.CarrierWasm, "direct-wasm", `plugin "direct-wasm" is a wasm protocol, not a wasm adapter`},
	} {
		_, err := m.AdapterFor(c.carrier, c.plugin)
		require.EqualError(t, err, c.want, name)
	}

	var none *manifest.Manifest // no plugins.manifest configured
	_, err = none.AdapterFor(manifest.CarrierWasm, "openai-wasm")
	require.EqualError(t, err, "carrier wasm needs a plugin manifest (plugins.manifest)")
}
