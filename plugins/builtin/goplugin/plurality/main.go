// Command plurality is the built-in plurality judging protocol as a go-plugin
// plugin process, for the go-plugin carrier (plugins/goplugin). Build it,
// pin its sha256 in the plugin manifest (carrier: goplugin) and let the host
// start it; run by hand, it only prints that it is a plugin:
//
//	go build -trimpath -o plurality-goplugin ./plugins/builtin/goplugin/plurality
package main

import (
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/protocol/plurality"
)

func main() { goplugin.ServeProtocol(plurality.New()) }
