// Package release checks what `make release VERSION=vX.Y.Z` writes (test/release/build):
//
//   - the image archive is an OCI image layout whose one entry is an image index of a linux/amd64
//     and a linux/arm64 image, each the Dockerfile's (one static binary at /migranet, no base,
//     USER 65532:65532, entrypoint /migranet); pushed as crane pushes it, it keeps its digest;
//   - the amd64 binary, run, and the arm64 one, run under qemu-aarch64-static, print the release's
//     version and commit;
//   - the CLI archive of each platform holds kubectl-migranet and LICENSE, built for that platform
//     (Go build information), stamped; as kubectl-migranet its help says `kubectl migranet`;
//   - the krew manifest validates with krew's own code and krew installs every archive with it;
//   - each SBOM names exactly the modules its binary links, at go.mod's versions;
//   - migranet.yaml pins every container to the index digest; SHA256SUMS verifies;
//   - an unsigned cut says so; a cut signed with a throwaway key verifies as cosign verify-blob
//     (and openssl) check it, and fails for a changed byte; docs/release-key.pub is a public key
//     and no private key is in git;
//   - the same commit cut twice gives the same bytes but the signatures; a VERSION that is not
//     semver is refused.
//
// The upgrade from the previous release is test/upgrade's.
package release
