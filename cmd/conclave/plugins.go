package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/conclavehq/conclave/adapters"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// pluginJSON is one manifest entry as `conclave plugins` reports it.
type pluginJSON struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Carrier  string   `json:"carrier"`
	Path     string   `json:"path"`
	SHA256   string   `json:"sha256"`
	DigestOK bool     `json:"digest_ok"`
	Engines  []string `json:"engines"`
	// Set by verify.
	Loaded    bool   `json:"loaded,omitempty"`
	Describes string `json:"describes,omitempty"` // "openai 1.0.0 (bearer)"
	Error     string `json:"error,omitempty"`
}

type pluginsJSON struct {
	Manifest string       `json:"manifest"`
	Native   []string     `json:"native"`
	Plugins  []pluginJSON `json:"plugins"`
	Engines  []engineUse  `json:"engines"`
	OK       bool         `json:"ok"`
}

type engineUse struct {
	Engine  string `json:"engine"`
	Adapter string `json:"adapter"`
	Carrier string `json:"carrier"`
	Plugin  string `json:"plugin,omitempty"`
	Error   string `json:"error,omitempty"`
}

// pluginsRun is `plugins list` or, with verify, `plugins verify`.
func pluginsRun(verify bool) func(context.Context, *flag.FlagSet, []string, cmdIO) error {
	return func(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
		return pluginsCmd(ctx, fs, args, verify, cio.stdout)
	}
}

// pluginsCmd shows (list) or checks (verify) the plugins a deployment loads.
func pluginsCmd(ctx context.Context, fs *flag.FlagSet, args []string, verify bool, w io.Writer) error {
	cf := addCommon(fs)
	mpath := fs.String("manifest", "", "the plugin manifest `FILE`; defaults to plugins.manifest of the configuration")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	if *mpath != "" {
		cfg.Plugins.Manifest = *mpath
	}
	catalog, err := cfg.Catalog()
	if err != nil {
		return err
	}
	out := pluginsJSON{Manifest: cfg.Plugins.Manifest, Native: adapters.BuiltinNames(), Plugins: []pluginJSON{}, OK: true}
	var m *manifest.Manifest
	if cfg.Plugins.Manifest != "" {
		if m, err = manifest.Load(cfg.Plugins.Manifest); err != nil {
			return err
		}
	}

	var users map[string][]string
	out.Engines, users = engineUses(catalog, m)
	for _, u := range out.Engines {
		out.OK = out.OK && u.Error == ""
	}
	if m != nil {
		checked, err := checkPlugins(ctx, cfg, catalog, m, users, verify)
		if err != nil {
			return err
		}
		for _, pj := range checked {
			out.OK = out.OK && pj.Error == ""
		}
		out.Plugins = checked
	}

	if *cf.json {
		if err := emit(w, true, out, ""); err != nil {
			return err
		}
	} else {
		printPlugins(w, &out, verify)
	}
	if verify && !out.OK {
		return errors.New("plugins verify: some plugins or engines failed the check (see above)")
	}
	return nil
}

// engineUses says, for each engine of the catalogue by id, what serves it
// and what is wrong with that, and which engines each plugin of m serves.
func engineUses(catalog *core.Catalog, m *manifest.Manifest) ([]engineUse, map[string][]string) {
	ids := make([]string, 0, len(catalog.Engines()))
	for id := range catalog.Engines() {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var uses []engineUse
	users := map[string][]string{}
	for _, id := range ids {
		e := catalog.Engines()[id]
		use := engineUse{Engine: id, Adapter: e.Adapter, Carrier: e.Carrier, Plugin: e.Plugin}
		switch {
		case e.Carrier == core.CarrierNative:
			if _, ok := adapters.Builtin(e.Adapter); !ok {
				use.Error = fmt.Sprintf("no built-in adapter %q", e.Adapter)
			}
		default:
			if _, err := m.AdapterFor(e.Carrier, e.Plugin); err != nil {
				use.Error = err.Error()
			}
			if m != nil {
				users[e.Plugin] = append(users[e.Plugin], id)
			}
		}
		uses = append(uses, use)
	}
	return uses, users
}

// checkPlugins checks each plugin of m: its digest, and with verify its
// loading on its carrier and what it describes itself as against the
// engines that use it.
func checkPlugins(ctx context.Context, cfg *config.Config, catalog *core.Catalog, m *manifest.Manifest,
	users map[string][]string, verify bool) ([]pluginJSON, error) {
	var wasm *wasmhost.Host
	var gop *goplugin.Host
	defer func() {
		if wasm != nil {
			_ = wasm.Close(context.WithoutCancel(ctx))
		}
		if gop != nil {
			_ = gop.Close()
		}
	}()
	quiet := slog.New(slog.DiscardHandler)
	out := []pluginJSON{}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		pj := pluginJSON{Name: e.Name, Kind: e.Kind, Carrier: e.Carrier, Path: e.Path, SHA256: e.SHA256, Engines: users[e.Name]}
		if pj.Engines == nil {
			pj.Engines = []string{}
		}
		if err := e.Verify(); err != nil {
			pj.Error = err.Error()
		} else {
			pj.DigestOK = true
		}
		if verify && pj.DigestOK {
			var describes string
			var err error
			switch e.Carrier {
			case manifest.CarrierWasm:
				if wasm == nil {
					if wasm, err = wasmhost.New(ctx, wasmhost.Config{CacheDir: cfg.WasmCache(), Logger: quiet}); err != nil {
						return nil, err
					}
				}
				describes, err = describePlugin(ctx, e, wasm.LoadAdapter, wasm.LoadProtocol)
			case manifest.CarrierGoPlugin:
				if gop == nil {
					gop = goplugin.New(goplugin.Config{Logger: quiet})
				}
				describes, err = describePlugin(ctx, e, gop.LoadAdapter, gop.LoadProtocol)
			}
			if err != nil {
				pj.Error = err.Error()
			} else {
				pj.Loaded, pj.Describes = true, describes
				for _, id := range pj.Engines {
					if want := catalog.Engines()[id].Adapter; !strings.HasPrefix(describes, want+" ") {
						pj.Error = fmt.Sprintf("engine %s names adapter %q but the plugin is %s", id, want, describes)
					}
				}
			}
		}
		out = append(out, pj)
	}
	return out, nil
}

// describePlugin loads an entry on its carrier and describes it.
func describePlugin(ctx context.Context, e *manifest.Entry,
	loadAdapter func(context.Context, *manifest.Entry) (core.Adapter, error),
	loadProtocol func(context.Context, *manifest.Entry) (core.Protocol, error),
) (string, error) {
	if e.Kind == manifest.KindProtocol {
		p, err := loadProtocol(ctx, e)
		if err != nil {
			return "", err
		}
		info, err := p.Describe(ctx)
		if err != nil {
			return "", err
		}
		return info.Name + " " + info.Version, nil
	}
	a, err := loadAdapter(ctx, e)
	if err != nil {
		return "", err
	}
	info, err := a.Describe(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s (%s)", info.Name, info.Version, info.Auth), nil
}

func printPlugins(w io.Writer, out *pluginsJSON, verify bool) {
	fmt.Fprintf(w, "Native adapters: %s\n", strings.Join(out.Native, ", "))
	if out.Manifest == "" {
		fmt.Fprintln(w, "No plugin manifest configured (plugins.manifest).")
	} else {
		fmt.Fprintf(w, "Plugin manifest: %s\n", out.Manifest)
	}
	for _, p := range out.Plugins {
		status := "ok"
		switch {
		case p.Error != "":
			status = "FAIL"
		case !verify:
			status = "digest ok"
		}
		line := fmt.Sprintf("  %-5s %-26s %-8s %-8s %s", status, p.Name, p.Kind, p.Carrier, p.SHA256[:12])
		if p.Describes != "" {
			line += "  " + p.Describes
		}
		if len(p.Engines) > 0 {
			line += "  used by " + strings.Join(p.Engines, ", ")
		}
		fmt.Fprintln(w, line)
		if p.Error != "" {
			fmt.Fprintf(w, "        %s\n", p.Error)
		}
	}
	for _, e := range out.Engines {
		if e.Error != "" {
			fmt.Fprintf(w, "  FAIL  engine %s: %s\n", e.Engine, e.Error)
		}
	}
}
