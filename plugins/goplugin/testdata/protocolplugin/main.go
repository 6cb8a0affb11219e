// Command protocolplugin serves the test protocol of package testplugin as a
// go-plugin plugin, for the carrier's tests.
package main

import (
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/goplugin/internal/testplugin"
)

func main() { goplugin.ServeProtocol(testplugin.Protocol{}) }
