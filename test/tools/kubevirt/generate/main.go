// Command generate prints, as one YAML stream, what virt-operator would install for virt-api,
// virt-controller and virt-handler, rendered by KubeVirt's own generator functions of the release
// this module pins: every KubeVirt CRD, the components' service accounts and RBAC, the aggregated
// cluster roles, virt-api's Validating and Mutating webhook configurations, and the APIServices of
// virt-api's aggregated API (subresources.kubevirt.io). The webhooks call virt-api at
// --virt-api-url (instead of the virt-api Service, which nothing routes to in the local cluster);
// the APIServices keep their reference to the virt-api Service but at the URL's port, which is
// what the Service must forward to. Both trust the PEM bundle in --ca-bundle, as virt-operator's
// CA injection would make them.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run() error {
	namespace := flag.String("namespace", "kubevirt", "the KubeVirt install namespace")
	apiURL := flag.String("virt-api-url", "", "base URL the API server calls virt-api's webhooks at, e.g. https://127.0.0.1:8443")
	caFile := flag.String("ca-bundle", "", "PEM file of the CA that signed virt-api's serving certificate")
	flag.Parse()
	if *apiURL == "" || *caFile == "" {
		return fmt.Errorf("--virt-api-url and --ca-bundle are required")
	}
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		return err
	}
	objs, err := crds()
	if err != nil {
		return err
	}
	objs = append(objs, rbac.GetAllApiServer(*namespace)...)
	// includeNADRules: virt-operator passes !ExternalNetResourceInjectionEnabled(), true by default.
	objs = append(objs, rbac.GetAllController(*namespace, true)...)
	objs = append(objs, rbac.GetAllHandler(*namespace)...)
	objs = append(objs, rbac.GetAllCluster()...)

	validating := components.NewVirtAPIValidatingWebhookConfiguration(*namespace)
	for i := range validating.Webhooks {
		if err := pointAt(&validating.Webhooks[i].ClientConfig, *apiURL, ca); err != nil {
			return fmt.Errorf("webhook %s: %w", validating.Webhooks[i].Name, err)
		}
	}
	mutating := components.NewVirtAPIMutatingWebhookConfiguration(*namespace)
	for i := range mutating.Webhooks {
		if err := pointAt(&mutating.Webhooks[i].ClientConfig, *apiURL, ca); err != nil {
			return fmt.Errorf("webhook %s: %w", mutating.Webhooks[i].Name, err)
		}
	}
	objs = append(objs, validating, mutating)

	port, err := urlPort(*apiURL)
	if err != nil {
		return err
	}
	for _, svc := range components.NewVirtAPIAPIServices(*namespace) {
		svc.Spec.Service.Port = &port
		svc.Spec.CABundle = ca
		objs = append(objs, svc)
	}

	var out bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}

// crds renders every CRD virt-operator installs.
func crds() ([]runtime.Object, error) {
	var out []runtime.Object
	for _, f := range []func() (*extv1.CustomResourceDefinition, error){
		components.NewVirtualMachineInstanceCrd, components.NewPresetCrd, components.NewReplicaSetCrd,
		components.NewVirtualMachineCrd, components.NewVirtualMachineInstanceMigrationCrd,
		components.NewVirtualMachineSnapshotCrd, components.NewVirtualMachineSnapshotContentCrd,
		components.NewVirtualMachineRestoreCrd, components.NewVirtualMachineInstancetypeCrd,
		components.NewVirtualMachineClusterInstancetypeCrd, components.NewVirtualMachinePoolCrd,
		components.NewMigrationPolicyCrd, components.NewVirtualMachinePreferenceCrd,
		components.NewVirtualMachineClusterPreferenceCrd, components.NewVirtualMachineExportCrd,
		components.NewVirtualMachineCloneCrd, components.NewVirtualMachineBackupCrd,
		components.NewVirtualMachineBackupTrackerCrd, components.NewKubeVirtCrd,
	} {
		crd, err := f()
		if err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	return out, nil
}

// pointAt replaces a Service reference by the URL base + the service path.
func pointAt(cc *admissionregistrationv1.WebhookClientConfig, base string, ca []byte) error {
	if cc.Service == nil {
		return fmt.Errorf("no service reference to replace")
	}
	path := ""
	if cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	u := strings.TrimSuffix(base, "/") + path
	cc.Service, cc.URL, cc.CABundle = nil, &u, ca
	return nil
}

// urlPort is the port of an https URL (443 when it names none).
func urlPort(raw string) (int32, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, err
	}
	if u.Port() == "" {
		return 443, nil
	}
	p, err := strconv.ParseInt(u.Port(), 10, 32)
	return int32(p), err
}
