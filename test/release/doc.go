// Package release checks what `make release VERSION=vX.Y.Z` writes (test/release/build):
//
//   - the image archive is an OCI image layout that go-containerregistry loads and validates, and
//     its image is the Dockerfile's: one static binary at /migranet, no base, USER 65532:65532,
//     entrypoint /migranet, linux/amd64;
//   - that binary, run, prints the release's version and commit (`migranet version`);
//   - migranet.yaml pins every container to the archive's image digest; SHA256SUMS verifies;
//   - the same commit cut twice gives the same bytes; a VERSION that is not semver is refused.
//
// The upgrade from the previous release is test/upgrade's.
package release
