package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// devImage is the image every manifest names (manifests/base's images:); `make deploy` replaces it
// with IMG, a release with the pinned reference.
const devImage = "migranet:dev"

// installManifest renders the default overlay of the tree at src with kubectl's kustomize and
// names the image ref in every container. It fails when a container names another image, or
// none does: the release would install something else than its image.
func installManifest(kubectl, src, version, commit, ref string) ([]byte, error) {
	var out, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(src, "manifests"))
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize manifests: %v: %s", err, stderr.String())
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# migranet %s (commit %s): kubectl apply --server-side -f migranet.yaml\n", version, commit)
	pinned := 0
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		field, value, ok := strings.Cut(line, "image: ")
		if indent := strings.TrimSpace(field); ok && (indent == "" || indent == "-") {
			if strings.TrimSpace(value) != devImage {
				return nil, fmt.Errorf("a container of manifests/ names image %q, not %s: the release would not run its own image", strings.TrimSpace(value), devImage)
			}
			line = field + "image: " + ref + "\n"
			pinned++
		}
		b.WriteString(line)
	}
	if pinned == 0 {
		return nil, fmt.Errorf("no container of manifests/ names image %s: nothing to pin", devImage)
	}
	return b.Bytes(), nil
}
