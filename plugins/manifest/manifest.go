// Package manifest reads the plugin manifest: the list of plugins a
// deployment may load, each pinned by the SHA-256 of its file. A plugin
// whose file does not match its digest is never loaded.
//
//	plugins:
//	  - name: openai-wasm
//	    kind: adapter        # adapter | protocol
//	    carrier: wasm        # wasm | goplugin
//	    path: openai.wasm    # relative to the manifest's directory
//	    sha256: 3f0c…        # hex SHA-256 of the file
package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"gopkg.in/yaml.v3"
)

// ErrDigestMismatch: a plugin's file is not the one the manifest pins.
var ErrDigestMismatch = errors.New("plugin file does not match its pinned sha256")

// Kinds and carriers.
const (
	KindAdapter     = "adapter"
	KindProtocol    = "protocol"
	CarrierWasm     = "wasm"
	CarrierGoPlugin = "goplugin"
)

// Entry is one plugin.
type Entry struct {
	Name    string `yaml:"name" json:"name"`
	Kind    string `yaml:"kind" json:"kind"`
	Carrier string `yaml:"carrier" json:"carrier"`
	// Path is absolute after Load (relative paths are resolved against the
	// manifest's directory).
	Path   string `yaml:"path" json:"path"`
	SHA256 string `yaml:"sha256" json:"sha256"`
}

// Manifest is a loaded plugin manifest.
type Manifest struct {
	Path    string  `yaml:"-" json:"path"`
	Plugins []Entry `yaml:"plugins" json:"plugins"`
}

var (
	nameRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	digestRe = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Load reads and checks the manifest at path. It does not read the plugin
// files; Verify does.
func Load(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading plugin manifest: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("reading plugin manifest: %w", err)
	}
	m, err := Parse(b, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.Path = path
	return m, nil
}

// Parse reads a manifest whose relative paths are relative to dir, which
// should be absolute: plugins may run with another working directory.
func Parse(b []byte, dir string) (*Manifest, error) {
	var m Manifest
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		f := fmt.Sprintf("plugins[%d]", i)
		switch {
		case !nameRe.MatchString(e.Name):
			return nil, fmt.Errorf("%s.name: %q is not a lowercase name (a-z, 0-9, . _ -)", f, e.Name)
		case seen[e.Name]:
			return nil, fmt.Errorf("%s.name: %q is listed twice", f, e.Name)
		case e.Kind != KindAdapter && e.Kind != KindProtocol:
			return nil, fmt.Errorf("%s.kind: %q is not adapter or protocol", f, e.Kind)
		case e.Carrier != CarrierWasm && e.Carrier != CarrierGoPlugin:
			return nil, fmt.Errorf("%s.carrier: %q is not wasm or goplugin", f, e.Carrier)
		case e.Path == "":
			return nil, fmt.Errorf("%s.path: required", f)
		case !digestRe.MatchString(e.SHA256):
			return nil, fmt.Errorf("%s.sha256: not 64 lowercase hex digits", f)
		}
		seen[e.Name] = true
		if !filepath.IsAbs(e.Path) {
			e.Path = filepath.Join(dir, e.Path)
		}
	}
	return &m, nil
}

// Get finds an entry by name.
func (m *Manifest) Get(name string) (*Entry, bool) {
	for i := range m.Plugins {
		if m.Plugins[i].Name == name {
			return &m.Plugins[i], true
		}
	}
	return nil, false
}

// AdapterFor finds the entry that carries an engine's adapter on a plugin
// carrier (wasm or goplugin): the plugin the engine names, which must be an
// adapter on that carrier. It is the one check `conclave serve` makes before
// loading an engine's plugin and `conclave plugins verify` reports. A nil
// Manifest stands for a deployment that configures none
// (plugins.manifest unset).
func (m *Manifest) AdapterFor(carrier, plugin string) (*Entry, error) {
	if m == nil {
		return nil, fmt.Errorf("carrier %s needs a plugin manifest (plugins.manifest)", carrier)
	}
	e, ok := m.Get(plugin)
	if !ok {
		return nil, fmt.Errorf("plugin %q is not in the manifest %s", plugin, m.Path)
	}
	if e.Carrier != carrier || e.Kind != KindAdapter {
		return nil, fmt.Errorf("plugin %q is a %s %s, not a %s adapter", plugin, e.Carrier, e.Kind, carrier)
	}
	return e, nil
}

// Verify checks that the entry's file exists and matches its pinned digest.
func (e *Entry) Verify() error {
	got, err := Digest(e.Path)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", e.Name, err)
	}
	if got != e.SHA256 {
		return fmt.Errorf("plugin %s (%s): %w: pinned %s, file is %s", e.Name, e.Path, ErrDigestMismatch, e.SHA256, got)
	}
	return nil
}

// ReadVerified reads the entry's file and checks its digest on the bytes it
// returns, so that the bytes loaded are exactly the bytes verified.
func (e *Entry) ReadVerified() ([]byte, error) {
	b, err := os.ReadFile(e.Path)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", e.Name, err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != e.SHA256 {
		return nil, fmt.Errorf("plugin %s (%s): %w: pinned %s, file is %s", e.Name, e.Path, ErrDigestMismatch, e.SHA256, got)
	}
	return b, nil
}

// Digest returns the hex SHA-256 of the file at path.
func Digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
