package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/plugins/manifest"
	"github.com/conclavehq/conclave/plugins/plugintest"
)

// pluginsConfig writes a configuration whose engines run on the wasm and
// go-plugin carriers, plus a manifest holding m.
func pluginsConfig(t *testing.T, m *manifest.Manifest, extraEngine string) string {
	t.Helper()
	mpath := plugintest.WriteManifest(t, m)
	cfg := fmt.Sprintf(`plugins:
  manifest: %q
  wasm_cache_dir: "off"
engines:
  - {id: sim/atlas, family: sim-openai, max_tier: plus, adapter: openai, endpoint: sim, carrier: wasm, plugin: openai-wasm}
  - {id: sim/sonnet, family: sim-anthropic, max_tier: plus, adapter: anthropic, endpoint: sim, carrier: goplugin, plugin: anthropic-goplugin}
%s
modes:
  - {key: k, id: k-mode, name: K, critique: never, max_rounds: 1, seats: {plus: [{engine: sim/atlas}, {engine: sim/sonnet}]}}
judges: []
`, mpath, extraEngine)
	path := filepath.Join(t.TempDir(), "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

func runPlugins(t *testing.T, args ...string) (pluginsJSON, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"plugins"}, append(args, "--json")...), &out, &errOut)
	var v pluginsJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &v), "output: %s", out.String())
	return v, err
}

func TestPluginsListAndVerify(t *testing.T) {
	t.Parallel()
	cfg := pluginsConfig(t, plugintest.Builtin(t), "")

	list, err := runPlugins(t, "list", "--config", cfg)
	require.NoError(t, err)
	require.True(t, list.OK)
	require.Equal(t, []string{"anthropic", "bedrock", "gemini", "openai"}, list.Native)
	require.Len(t, list.Plugins, 14)
	byName := map[string]pluginJSON{}
	for _, p := range list.Plugins {
		require.True(t, p.DigestOK, p.Name)
		require.False(t, p.Loaded, "list does not load")
		byName[p.Name] = p
	}
	require.Equal(t, []string{"sim/atlas"}, byName["openai-wasm"].Engines)
	require.Equal(t, []string{"sim/sonnet"}, byName["anthropic-goplugin"].Engines)

	v, err := runPlugins(t, "verify", "--config", cfg)
	require.NoError(t, err)
	require.True(t, v.OK)
	for _, p := range v.Plugins {
		require.True(t, p.Loaded, p.Name)
		require.Empty(t, p.Error, p.Name)
	}
	byName = map[string]pluginJSON{}
	for _, p := range v.Plugins {
		byName[p.Name] = p
	}
	require.Equal(t, "openai 1.0.0 (bearer)", byName["openai-wasm"].Describes)
	require.Equal(t, "bedrock 1.0.0 (aws-sigv4)", byName["bedrock-goplugin"].Describes)
	require.Equal(t, "direct 1.0.0", byName["direct-wasm"].Describes)
	require.Equal(t, "pairwise 1.0.0", byName["pairwise-goplugin"].Describes)
	require.Equal(t, "plurality 1.0.0", byName["plurality-wasm"].Describes)
}

func TestPluginsVerifyFailsOnATamperedPluginOrABadReference(t *testing.T) {
	t.Parallel()
	m := plugintest.Builtin(t)
	// A copy of one module with a byte changed: its pinned digest no longer holds.
	tampered := *m
	tampered.Plugins = append([]manifest.Entry(nil), m.Plugins...)
	for i := range tampered.Plugins {
		e := &tampered.Plugins[i]
		if e.Name == "gemini-wasm" {
			b, err := os.ReadFile(e.Path)
			require.NoError(t, err)
			b[len(b)-1] ^= 0xff
			e.Path = filepath.Join(t.TempDir(), "gemini.wasm")
			require.NoError(t, os.WriteFile(e.Path, b, 0o600))
		}
	}
	cfg := pluginsConfig(t, &tampered, `  - {id: sim/ghost, family: sim-x, max_tier: plus, adapter: openai, endpoint: sim, carrier: wasm, plugin: no-such-plugin}
  - {id: sim/wrong, family: sim-y, max_tier: plus, adapter: gemini, endpoint: sim, carrier: wasm, plugin: openai-wasm}`)

	v, err := runPlugins(t, "verify", "--config", cfg)
	require.ErrorContains(t, err, "failed the check")
	require.False(t, v.OK)
	for _, p := range v.Plugins {
		switch p.Name {
		case "gemini-wasm":
			require.False(t, p.DigestOK)
			require.Contains(t, p.Error, "does not match its pinned sha256")
		case "openai-wasm":
			require.Contains(t, p.Error, `engine sim/wrong names adapter "gemini"`)
		default:
			require.Empty(t, p.Error, p.Name)
		}
	}
	var ghost engineUse
	for _, e := range v.Engines {
		if e.Engine == "sim/ghost" {
			ghost = e
		}
	}
	require.Contains(t, ghost.Error, `plugin "no-such-plugin" is not in the manifest`)

	// list reports the same digest failure without loading anything.
	list, err := runPlugins(t, "list", "--config", cfg)
	require.NoError(t, err, "list reports; only verify fails")
	require.False(t, list.OK)
}
