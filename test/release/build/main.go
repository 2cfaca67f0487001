package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/sigstore/pkg/signature"
)

// options are the command's flags.
type options struct {
	version, registry, kubectl, out, rev, repo string
	baseURL, cyclonedx, signingKey             string
}

func main() {
	var o options
	var genKey, pubKey string
	flag.StringVar(&o.version, "version", "", "the release's version, vMAJOR.MINOR.PATCH[-PRERELEASE]")
	flag.StringVar(&o.registry, "registry", "", "where the image will be pushed: the manifest names REGISTRY/migranet:VERSION@sha256:...")
	flag.StringVar(&o.baseURL, "base-url", "", "where the release folder's files will be downloaded from: the krew manifest's URIs are BASE_URL/<archive>")
	flag.StringVar(&o.kubectl, "kubectl", "kubectl", "the kubectl whose kustomize renders manifests/")
	flag.StringVar(&o.cyclonedx, "cyclonedx", "cyclonedx-gomod", "the cyclonedx-gomod (v1.10.0) that writes each binary's SBOM")
	flag.StringVar(&o.signingKey, "signing-key", "", "the private key (PEM) that signs SHA256SUMS and the image; none: the release is unsigned and says so")
	flag.StringVar(&o.out, "out", "dist", "the release folder is OUT/VERSION")
	flag.StringVar(&o.rev, "rev", "HEAD", "the commit to release")
	flag.StringVar(&o.repo, "repo", ".", "the migranet git repository")
	flag.StringVar(&genKey, "generate-key", "", "instead of a release: write a new signing key pair, the private key at this path (0600)")
	flag.StringVar(&pubKey, "public-key", "docs/release-key.pub", "with -generate-key: where the public key goes")
	flag.Parse()
	var err error
	if genKey != "" {
		if err = generateKey(genKey, pubKey); err == nil {
			fmt.Fprintf(os.Stderr, "release key: private %s (keep it out of git), public %s\n", genKey, pubKey)
		}
	} else {
		err = run(o, os.Stderr)
	}
	if err != nil {
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
	if o.baseURL == "" {
		return fmt.Errorf("no base URL: the krew manifest must name where the archives are downloaded from (make release BASE_URL=<url of the release folder>)")
	}
	var signer signature.SignerVerifier
	if o.signingKey != "" {
		var err error
		if signer, err = loadSigner(o.signingKey); err != nil {
			return err
		}
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
	if err := sign(signer, folder, o.version, log); err != nil {
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

// cut writes the release's files into folder, working in scratch: the binary of every platform
// (timed, as cross-compiling is most of a cut), its CLI archive and SBOM, the image index of the
// linux ones, the install and krew manifests, the image's signing payload, SHA256SUMS.
func cut(o options, src source, scratch, folder string, log io.Writer) error {
	tree, bins, layoutDir := filepath.Join(scratch, "src"), filepath.Join(scratch, "bin"), filepath.Join(scratch, "oci")
	for _, d := range []string{tree, folder, bins} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := extract(o.repo, src.commit, tree); err != nil {
		return err
	}
	binary := map[platform]string{}
	for _, p := range platforms() {
		start := time.Now()
		binary[p] = filepath.Join(bins, p.os+"_"+p.arch, pluginName(p))
		if err := buildBinary(tree, binary[p], p, o.version, src.commit); err != nil {
			return err
		}
		if err := cliArchive(filepath.Join(folder, cliArchiveName(o.version, p)), binary[p], filepath.Join(tree, "LICENSE"), p, src.time); err != nil {
			return err
		}
		if err := writeSBOM(o.cyclonedx, binary[p], filepath.Join(folder, sbomName(o.version, p)), o.version); err != nil {
			return err
		}
		fmt.Fprintf(log, "make release: %s built in %.0f s\n", p, time.Since(start).Seconds())
	}
	var imgs []v1.Image
	for _, p := range imagePlatforms() {
		img, err := image(binary[p], p, src.time, o.version, src.commit)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	idx, err := imageIndex(imgs, imagePlatforms())
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	archive := "migranet-" + o.version + ".oci.tar"
	if err := writeArchive(idx, o.version, src.time, layoutDir, filepath.Join(folder, archive)); err != nil {
		return err
	}
	repository := o.registry + "/migranet"
	ref := fmt.Sprintf("%s:%s@%s", repository, o.version, digest)
	manifest, err := installManifest(o.kubectl, tree, o.version, src.commit, ref)
	if err != nil {
		return err
	}
	krew, err := krewManifest(folder, o.version, o.baseURL)
	if err != nil {
		return err
	}
	payload, err := imagePayload(repository, digest)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"migranet.yaml": manifest, KrewManifestFile: krew, ImagePayloadFile: payload} {
		if err := os.WriteFile(filepath.Join(folder, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "make release: image index %s (%d platforms)\n", ref, len(imgs))
	return writeSums(folder)
}

// sign signs SHA256SUMS and the image's payload with signer, or, without one, writes UNSIGNED and
// says so.
func sign(signer signature.SignerVerifier, folder, version string, log io.Writer) error {
	if signer == nil {
		fmt.Fprintf(log, "make release: UNSIGNED: no SIGNING_KEY given; %s carries no signature (file %s says so)\n", version, UnsignedFile)
		return os.WriteFile(filepath.Join(folder, UnsignedFile), []byte(unsignedNote(version)), 0o644)
	}
	for _, f := range []string{SumsFile, ImagePayloadFile} {
		if err := signFile(signer, filepath.Join(folder, f)); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "make release: signed %s and %s (%s, %s)\n", SumsFile, ImagePayloadFile, SumsSignature, ImageSignature)
	return nil
}
