package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// sbomName is the name of the SBOM of p's binary: beside its archive, same stem.
func sbomName(version string, p platform) string {
	return "kubectl-migranet_" + version + "_" + p.os + "_" + p.arch + ".cdx.json"
}

// writeSBOM writes the CycloneDX SBOM of binary to out with cyclonedx-gomod's `bin` mode (it
// reads the Go build information `go version -m` prints: the main module, every module linked,
// the build settings). Without its serial number and timestamp (-noserial, -notimestamp) the same
// binary gives the same SBOM; the main component's version is the release's.
func writeSBOM(tool, binary, out, version string) error {
	var stderr bytes.Buffer
	cmd := exec.Command(tool, "bin", "-json", "-noserial", "-notimestamp", "-version", version, "-output", out, binary)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s bin %s: %v: %s", tool, binary, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
