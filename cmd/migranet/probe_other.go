//go:build !linux

package main

import (
	"fmt"
	"io"
)

// runProbe on another OS than linux: the probe agent runs beside virt-handler on linux nodes (its
// migration0 interface, network namespaces and neighbour tables are linux's), so the CLI built for
// an admin's darwin or windows machine has every command but this one.
func runProbe(name string, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s probe: the probe agent runs on linux nodes only (the DaemonSet migranet-probe); this binary is built for another OS\n", name)
	return 2
}
