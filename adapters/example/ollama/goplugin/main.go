// Command goplugin is the Ollama example adapter as a go-plugin process, for
// the go-plugin carrier (plugins/goplugin). Build it, then pin its sha256 in
// the plugin manifest with carrier goplugin (make plugins does both, as
// ollama-example-goplugin); run by hand, it only says that it is a plugin:
//
//	go build -trimpath -o ollama-example-goplugin ./adapters/example/ollama/goplugin
package main

import (
	"github.com/conclavehq/conclave/adapters/example/ollama"
	"github.com/conclavehq/conclave/plugins/goplugin"
)

func main() { goplugin.ServeAdapter(ollama.New()) }
