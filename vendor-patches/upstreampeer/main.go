//go:build vp_unpatched

// Command upstreampeer is a bench node (see harness/node) running KubeVirt
// v1.9.0's migration proxy exactly as published: this module resolves
// kubevirt.io/kubevirt from the module proxy with no patch applied, and the
// harness is built with the vp_unpatched tag (upstream constructor). run.sh bench
// starts it in the lab's namespaces next to the patched node processes.
package main

import (
	"fmt"
	"os"

	"github.com/migranet/migranet/vendor-patches/harness/node"
)

func main() {
	if err := node.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "upstreampeer:", err)
		os.Exit(1)
	}
}
