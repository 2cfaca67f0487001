// Command build is `make release VERSION=vX.Y.Z`: it cuts a release of one commit (HEAD unless
// -rev names another) into one folder, OUT/vX.Y.Z/:
//
//	migranet-vX.Y.Z.oci.tar  the image, an OCI image layout in a tar: the Dockerfile's image (one
//	                         static binary at /migranet, no base, USER 65532:65532, entrypoint
//	                         /migranet, linux/amd64), built without a container daemon
//	migranet.yaml            the default overlay (kubectl kustomize manifests/), the image pinned
//	                         as REGISTRY/migranet:vX.Y.Z@sha256:<the archive's image digest>
//	SHA256SUMS               sha256sum's format over the two files
//
// The release is the commit alone: its tree comes from `git archive`, so uncommitted changes never
// reach it, and every timestamp is the commit's time (SOURCE_DATE_EPOCH): the same commit, VERSION
// and Go toolchain give the same image digest, byte for byte the same files.
//
//	go run ./test/release/build -version v0.1.0 -registry <your-registry> -kubectl <kubectl> -out dist
package main
