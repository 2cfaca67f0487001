// Package manifests embeds the generated CRDs and webhook configuration, so `migranet dev` can
// register them on a cluster by itself. The kustomize base and overlays beside this file are what a
// cluster admin applies.
package manifests
