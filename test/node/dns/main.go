// Command coredns is CoreDNS with only the plugins the test bed's cluster DNS uses: it
// answers for cluster.local from Services and EndpointSlices (the kubernetes plugin), with
// a readiness endpoint. Its own module, so CoreDNS's dependency versions stay its own.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
