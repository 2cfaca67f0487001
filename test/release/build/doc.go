// Command build is `make release VERSION=vX.Y.Z`: it cuts a release of one commit (HEAD unless
// -rev names another) into one folder, OUT/vX.Y.Z/:
//
//	migranet-vX.Y.Z.oci.tar      the image, an OCI image layout in a tar whose index.json names one
//	                             image index (linux/amd64, linux/arm64), each image the Dockerfile's
//	                             (one static binary at /migranet, no base, USER 65532:65532,
//	                             entrypoint /migranet), built without a container daemon
//	migranet.yaml                the default overlay (kubectl kustomize manifests/), the image pinned
//	                             as REGISTRY/migranet:vX.Y.Z@sha256:<the image index's digest>
//	kubectl-migranet_vX.Y.Z_OS_ARCH.tar.gz (.zip on windows)
//	                             the CLI of each platform: kubectl-migranet[.exe] and LICENSE
//	kubectl-migranet_vX.Y.Z_OS_ARCH.cdx.json
//	                             each binary's CycloneDX SBOM (cyclonedx-gomod bin)
//	krew-migranet.yaml           the krew plugin manifest: BASE_URL/<archive>, sha256, bin
//	migranet-image.payload.json  cosign's simple-signing payload of the index digest
//	SHA256SUMS                   sha256sum's format over the files above
//	SHA256SUMS.sig, migranet-image.payload.json.sig
//	                             with -signing-key: the signatures (cosign's blob format); without
//	                             it, the file UNSIGNED instead
//
// The release is the commit alone: its tree comes from `git archive`, so uncommitted changes never
// reach it, and every timestamp is the commit's time (SOURCE_DATE_EPOCH): the same commit, VERSION,
// REGISTRY, BASE_URL, Go toolchain and cyclonedx-gomod build give byte for byte the same files but
// the signatures.
//
//	go run ./test/release/build -version v0.1.0 -registry <your-registry> -base-url <url> \
//	  -kubectl <kubectl> -cyclonedx <cyclonedx-gomod> [-signing-key <key>] -out dist
//	go run ./test/release/build -generate-key <private key path> -public-key docs/release-key.pub
package main
