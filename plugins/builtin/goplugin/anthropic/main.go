// Command anthropic is the built-in anthropic adapter as a go-plugin plugin process,
// for the go-plugin carrier (plugins/goplugin). Build it, pin its sha256 in
// the plugin manifest (carrier: goplugin) and let the host start it; run by
// hand, it only prints that it is a plugin:
//
//	go build -trimpath -o anthropic-goplugin ./plugins/builtin/goplugin/anthropic
package main

import (
	"github.com/conclavehq/conclave/adapters/anthropic"
	"github.com/conclavehq/conclave/plugins/goplugin"
)

func main() { goplugin.ServeAdapter(anthropic.New()) }
