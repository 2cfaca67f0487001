// Command gen writes the generated part of the Helm chart (manifests/chart: templates/*.yaml and
// files/) from kubectl kustomize of manifests/; `make chart` runs it, `make verify` fails when
// what it writes is not committed. -check writes nothing and names each file that differs.
package main
