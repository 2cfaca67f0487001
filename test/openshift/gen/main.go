// Command gen writes migranet's OLM bundle and its extras (manifests/olm) from kubectl kustomize of
// manifests/base with manifests/components/openshift and olm; `make bundle` runs it, `make verify` fails
// when what it writes is not committed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/migranet/migranet/test/openshift"
)

func main() {
	kubectl := flag.String("kubectl", "kubectl", "the kubectl whose kustomize renders manifests/ (make bundle passes the pinned one)")
	root := flag.String("root", ".", "the migranet tree")
	out := flag.String("out", "manifests/olm", "the directory to write (replaced whole)")
	flag.Parse()
	if err := run(context.Background(), *kubectl, *root, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubectl, root, out string) error {
	files, err := openshift.GenerateFromTree(ctx, kubectl, root)
	if err != nil {
		return err
	}
	return openshift.Write(out, files)
}
