// Command pairwise is the built-in pairwise judging protocol as a go-plugin
// plugin process, for the go-plugin carrier (plugins/goplugin). Build it,
// pin its sha256 in the plugin manifest (carrier: goplugin) and let the host
// start it; run by hand, it only prints that it is a plugin:
//
//	go build -trimpath -o pairwise-goplugin ./plugins/builtin/goplugin/pairwise
package main

import (
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/protocol/pairwise"
)

func main() { goplugin.ServeProtocol(pairwise.New()) }
