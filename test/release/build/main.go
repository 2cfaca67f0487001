package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// options are the command's flags.
type options struct {
	version, registry, kubectl, out, rev, repo string
}

func main() {
	var o options
	flag.StringVar(&o.version, "version", "", "the release's version, vMAJOR.MINOR.PATCH[-PRERELEASE]")
	flag.StringVar(&o.registry, "registry", "", "where the image will be pushed: the manifest names REGISTRY/migranet:VERSION@sha256:...")
	flag.StringVar(&o.kubectl, "kubectl", "kubectl", "the kubectl whose kustomize renders manifests/")
	flag.StringVar(&o.out, "out", "dist", "the release folder is OUT/VERSION")
	flag.StringVar(&o.rev, "rev", "HEAD", "the commit to release")
	flag.StringVar(&o.repo, "repo", ".", "the migranet git repository")
	flag.Parse()
	if err := run(o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "make release:", err)
		os.Exit(1)
	}
}

// run cuts the release into OUT/VERSION, written beside it first and renamed into place whole.
func run(o options, log io.Writer) error {
	if err := checkVersion(o.version); err != nil {
		return err
	}
	if o.registry == "" {
		return fmt.Errorf("no registry: the manifest must name where the image is pushed (make release REGISTRY=<your-registry>)")
	}
	src, err := resolve(o.repo, o.rev)
	if err != nil {
		return err
	}
	if src.dirty {
		fmt.Fprintf(log, "make release: the work tree has uncommitted changes; %s is cut from commit %s alone\n", o.version, src.commit)
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(o.out, ".release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	folder := filepath.Join(scratch, o.version)
	if err := cut(o, src, scratch, folder, log); err != nil {
		return err
	}
	final := filepath.Join(o.out, o.version)
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	if err := os.Rename(folder, final); err != nil {
		return err
	}
	fmt.Fprintf(log, "make release: %s written (commit %s)\n", final, src.commit)
	return nil
}

// cut writes the release's three files into folder, working in scratch.
func cut(o options, src source, scratch, folder string, log io.Writer) error {
	tree, binary, layoutDir := filepath.Join(scratch, "src"), filepath.Join(scratch, "migranet"), filepath.Join(scratch, "oci")
	for _, d := range []string{tree, folder} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := extract(o.repo, src.commit, tree); err != nil {
		return err
	}
	p := platform{os: "linux", arch: "amd64"}
	if err := buildBinary(tree, binary, p, o.version, src.commit); err != nil {
		return err
	}
	img, err := image(binary, p, src.time, o.version, src.commit)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	archive := "migranet-" + o.version + ".oci.tar"
	if err := writeArchive(img, p, o.version, src.time, layoutDir, filepath.Join(folder, archive)); err != nil {
		return err
	}
	ref := fmt.Sprintf("%s/migranet:%s@%s", o.registry, o.version, digest)
	manifest, err := installManifest(o.kubectl, tree, o.version, src.commit, ref)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(folder, "migranet.yaml"), manifest, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "make release: image %s\n", ref)
	return writeSums(folder)
}
