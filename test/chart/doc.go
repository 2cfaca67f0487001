// Package chart generates the Helm chart in manifests/chart from the kustomize renderings of
// manifests/ and proves the two install the same objects. The generator reads three renderings
// (the default, the cert-manager overlay, the default with the monitoring component), writes the
// objects of each kind as one template, the lines the two certificate variants do not share
// behind `certificates.issuer`, the monitoring component's objects behind `monitoring.enabled`,
// and puts the image, replica and KubeVirt namespace values where kustomize has migranet:dev, 2
// and kubevirt. The tests run the real helm (test/tools/build.sh helm): the committed chart is
// what the generator writes, `helm lint` passes, and `helm template` renders the same objects as
// `kubectl kustomize` for each choice of values. test/chart/gen is the command `make chart` runs.
package chart
