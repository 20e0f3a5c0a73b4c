// CoreDNS with only the plugins the test node uses (a full build compiles
// every cloud provider's SDK: minutes of the CI budget for nothing). The
// directive order is CoreDNS's own (core/dnsserver/zdirectives.go); a
// directive missing here is an unknown-directive error when the Corefile
// names it, never a silent no-op.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{
		"bind", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes",
	}
}

func main() { coremain.Run() }
