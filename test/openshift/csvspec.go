package openshift

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/migranet/migranet/test/chart"
)

// packageName and channel name the bundle in a catalog.
const (
	packageName = "migranet"
	channel     = "candidate"
)

const annotationsYAML = `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: ` + packageName + `
  operators.operatorframework.io.bundle.channels.v1: ` + channel + `
  operators.operatorframework.io.bundle.channel.default.v1: ` + channel + `
`

// dockerfileText builds the bundle image (`docker build -f manifests/olm/bundle.Dockerfile
// manifests/olm`); its labels repeat metadata/annotations.yaml, as OLM reads either.
const dockerfileText = `FROM scratch
LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=` + packageName + `
LABEL operators.operatorframework.io.bundle.channels.v1=` + channel + `
LABEL operators.operatorframework.io.bundle.channel.default.v1=` + channel + `
COPY bundle/manifests /manifests/
COPY bundle/metadata /metadata/
`

const description = `migranet gives KubeVirt (OpenShift Virtualization, OKD) a dedicated live-migration network,
managed from one cluster-scoped Setting (vm-migration-network): it renders the
NetworkAttachmentDefinition in openshift-cnv, sets the migration network, reports per-node
readiness, IP capacity and path health, and refuses migrations that cannot succeed.

After installing, apply manifests/olm/extras.yaml of the same release: the probe agent's
DaemonSet (SCC privileged, granted there), the admission policies, and the manager's Roles in
openshift-cnv, kube-system, default and migranet-probe, which a bundle cannot carry.
See docs/install.md, "On OpenShift Virtualization / OKD".`

// csv is the ClusterServiceVersion: the manager's Deployment serving OLM's certificate, its
// permissions, the owned CRDs and the webhook definitions.
func (b *builder) csv(clusterPerms, perms []any) ([]byte, error) {
	spec, _ := b.deployment["spec"].(map[string]any)
	containers, _ := dig(spec, "template", "spec", "containers").([]any)
	if len(containers) == 0 {
		return nil, fmt.Errorf("Deployment %s has no containers", managerDeployment)
	}
	manager, _ := containers[0].(map[string]any)
	args, _ := manager["args"].([]any)
	for _, a := range args {
		if s := fmt.Sprint(a); strings.HasPrefix(s, "--cert-") {
			return nil, fmt.Errorf("Deployment %s already has %s: under OLM the certificate is OLM's (render without a certificate component)", managerDeployment, s)
		}
	}
	manager["args"] = append(args, "--cert-dir="+OLMCertDir)
	image := fmt.Sprint(manager["image"])
	owned, err := b.ownedCRDs()
	if err != nil {
		return nil, err
	}
	sort.Slice(b.webhooks, func(i, j int) bool {
		return fmt.Sprint(b.webhooks[i]["generateName"]) < fmt.Sprint(b.webhooks[j]["generateName"])
	})
	webhooks := make([]any, len(b.webhooks))
	for i, w := range b.webhooks {
		webhooks[i] = w
	}
	csv := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "ClusterServiceVersion",
		"metadata": map[string]any{
			"name": packageName + ".v" + b.version,
			"annotations": map[string]any{
				"capabilities":   "Basic Install",
				"categories":     "Networking",
				"containerImage": image,
				"description":    "A dedicated live-migration network for KubeVirt, with admission of migrations onto it",
				"repository":     "https://github.com/migranet/migranet",
				"operatorframework.io/suggested-namespace":  managerNamespace,
				"operators.openshift.io/valid-subscription": `["OpenShift Virtualization"]`,
				"alm-examples": almExamples,
				// PathReports are the probe agents' own: the console lists them as no API to create.
				"operators.operatorframework.io/internal-objects": `["pathreports.migranet.io"]`,
			},
		},
		"spec": map[string]any{
			"displayName":    "migranet",
			"description":    description,
			"version":        b.version,
			"maturity":       channel,
			"minKubeVersion": "1.30.0",
			"keywords":       []any{"kubevirt", "live migration", "network", "multus"},
			"provider":       map[string]any{"name": "migranet"},
			"maintainers":    []any{map[string]any{"name": "migranet", "email": "migranet@users.noreply.github.com"}},
			"icon":           []any{map[string]any{"base64data": base64.StdEncoding.EncodeToString([]byte(iconSVG)), "mediatype": "image/svg+xml"}},
			"links":          []any{map[string]any{"name": "Source", "url": "https://github.com/migranet/migranet"}},
			"installModes": []any{
				map[string]any{"type": "OwnNamespace", "supported": false},
				map[string]any{"type": "SingleNamespace", "supported": false},
				map[string]any{"type": "MultiNamespace", "supported": false},
				map[string]any{"type": "AllNamespaces", "supported": true},
			},
			"customresourcedefinitions": map[string]any{"owned": owned},
			"install": map[string]any{
				"strategy": "deployment",
				"spec": map[string]any{
					"clusterPermissions": clusterPerms,
					"permissions":        perms,
					"deployments": []any{map[string]any{
						"name":  managerDeployment,
						"label": dig(b.deployment, "metadata", "labels"),
						"spec":  spec,
					}},
				},
			},
			"webhookdefinitions": webhooks,
		},
	}
	out, err := marshal(csv)
	if err != nil {
		return nil, err
	}
	return append([]byte(header+csvHeader), out...), nil
}

// csvHeader says what the CSV changes from manifests/.
const csvHeader = `# The manager serves the webhook certificate OLM mounts (--cert-dir); OLM names the webhooks'
# Service migranet-service and sets their namespaceSelector from the OperatorGroup (AllNamespaces:
# none): nad.migranet.io is scoped by its objectSelector (components/olm), and the policy
# migranet-managed-nads in manifests/olm/extras.yaml keeps that label in openshift-cnv;
# kubevirt.migranet.io and hyperconverged.migranet.io by their rules (README.md, the webhook
# table's "scope under OLM"). manifests/olm/extras.yaml holds what a bundle cannot carry.
`

// ownedCRDs lists the CRDs for the CSV: name, kind, every served version.
func (b *builder) ownedCRDs() ([]any, error) {
	var owned []any
	for _, crd := range b.crds {
		name := fmt.Sprint(dig(crd, "metadata", "name"))
		kind := fmt.Sprint(dig(crd, "spec", "names", "kind"))
		versions, _ := dig(crd, "spec", "versions").([]any)
		for _, v := range versions {
			v, _ := v.(map[string]any)
			if v["served"] != true {
				continue
			}
			desc := fmt.Sprint(dig(v, "schema", "openAPIV3Schema", "description"))
			if desc == "<nil>" {
				desc = kind
			}
			owned = append(owned, map[string]any{
				"name": name, "kind": kind, "version": v["name"], "displayName": kind,
				"description": firstSentence(desc),
			})
		}
	}
	if len(owned) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in the rendering")
	}
	return owned, nil
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

// extrasFile is the YAML stream of what the bundle cannot carry, as rendered.
func extrasFile(objs []chart.Object) []byte {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString(`# What an OLM bundle cannot carry, to apply after installing the bundle into migranet-system
# (oc apply --server-side -f manifests/olm/extras.yaml): OLM v0 creates from a bundle only the CSV,
# CRDs and a few namespaced kinds, in the install namespace. Here: the probe agent (namespace,
# DaemonSet, its RBAC and SCC grant, its PathReport policy), the migration network's guard
# policies, the policy that keeps migranet's NAD label in openshift-cnv (the namespace scope of
# nad.migranet.io, which a webhook definition cannot carry), and the manager's Roles and
# RoleBindings in the namespaces it reaches beyond its own.
`)
	for _, o := range objs {
		b.WriteString("---\n")
		b.WriteString(o.Text)
	}
	return []byte(b.String())
}

// almExamples is the Setting the console offers to create: migranet creates both settings at
// start, so an admin edits vm-migration-network's value (docs/settings-and-admission.md).
const almExamples = `[{"apiVersion":"migranet.io/v1beta1","kind":"Setting","metadata":{"name":"vm-migration-network"},` +
	`"value":"{\"clusterNetwork\":\"migration\",\"range\":\"192.168.100.0/24\",\"mtu\":9000}"}]`

// iconSVG is the catalog's icon: two nodes and the path between them.
const iconSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="8" fill="#1f4e79"/>` +
	`<circle cx="16" cy="32" r="8" fill="#fff"/><circle cx="48" cy="32" r="8" fill="#fff"/>` +
	`<path d="M24 32h16" stroke="#9cd" stroke-width="4"/></svg>`
