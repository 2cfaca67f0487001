package chart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const (
	root     = "../.."
	chartDir = root + "/manifests/chart"
)

// tool builds one tool of test/tools/build.sh (once; cached outside the work tree) and returns
// what the script prints.
func tool(t *testing.T, name string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(context.Background(), "bash", filepath.Join(root, "test", "tools", "build.sh"), name)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("test/tools/build.sh %s: %v\n%s", name, err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

func kubectl(t *testing.T) string { return filepath.Join(tool(t, "kubernetes"), "kubectl") }

func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(context.Background(), tool(t, "helm"), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.Bytes(), nil
}

// helmTemplate renders the chart as Harvester's add-on would install it: a release in a
// namespace other than migranet's own.
func helmTemplate(t *testing.T, set ...string) []byte {
	t.Helper()
	args := []string{"template", "migranet", chartDir, "--namespace", "harvester-system"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	out, err := Kustomize(context.Background(), kubectl(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func kustomizeWith(t *testing.T, resources, components []string) []byte {
	t.Helper()
	out, err := KustomizeWith(context.Background(), kubectl(t), resources, components)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// table is a rendering as objects by Key, each decoded from YAML (quoting, key order, comments
// and layout gone), so two renderings compare by what the API server would receive.
func table(t *testing.T, stream []byte) map[string]any {
	t.Helper()
	objs, err := SplitStream(stream)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	for _, o := range objs {
		var v any
		if err := yaml.Unmarshal([]byte(o.Text), &v); err != nil {
			t.Fatalf("%s: %v", o.Key(), err)
		}
		if _, dup := m[o.Key()]; dup {
			t.Errorf("%s is rendered twice", o.Key())
		}
		m[o.Key()] = v
	}
	return m
}

// sameTable fails naming every object one table has and the other lacks, and every object they
// hold differently, with the difference.
func sameTable(t *testing.T, what string, want, got map[string]any) {
	t.Helper()
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			t.Errorf("%s: helm template lacks %s", what, k)
		case !inWant:
			t.Errorf("%s: helm template renders %s, which kustomize does not", what, k)
		default:
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("%s: %s differs from kustomize's (-kustomize +helm):\n%s", what, k, d)
			}
		}
	}
	if len(want) < 20 {
		t.Errorf("%s: kustomize rendered %d objects: not migranet's manifests?", what, len(want))
	}
}

// TestChartIsGenerated: the committed chart is what the generator writes from manifests/ now.
// The fault it catches: a kustomize file changed without `make chart`, or a template edited by
// hand.
func TestChartIsGenerated(t *testing.T) {
	r, err := Render(context.Background(), kubectl(t), root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(r)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Drift(chartDir, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("manifests/chart/%s: run make chart and commit it", p)
	}
}

// TestTemplateIsKustomize: for each choice of certificates and monitoring, `helm template`
// renders the same objects, field by field, as `kubectl kustomize` of the matching manifests.
func TestTemplateIsKustomize(t *testing.T) {
	manifests := root + "/manifests"
	monitoring := manifests + "/monitoring"
	for _, tc := range []struct {
		name string
		set  []string
		want func(t *testing.T) []byte
	}{
		{"defaults: kubectl kustomize manifests/", nil,
			func(t *testing.T) []byte { return kustomize(t, manifests) }},
		{"certificates.issuer=cert-manager: manifests/overlays/cert-manager", []string{"certificates.issuer=cert-manager"},
			func(t *testing.T) []byte { return kustomize(t, manifests+"/overlays/cert-manager") }},
		{"monitoring.enabled: manifests/ with the monitoring component", []string{"monitoring.enabled=true"},
			func(t *testing.T) []byte { return kustomizeWith(t, []string{manifests}, []string{monitoring}) }},
		{"kubevirt.namespace: the overlay of docs/install.md, KubeVirt in another namespace", []string{"kubevirt.namespace=harvester-system"},
			docsOverlay},
		{"both: the cert-manager overlay with the monitoring component", []string{"certificates.issuer=cert-manager", "monitoring.enabled=true"},
			func(t *testing.T) []byte {
				return kustomizeWith(t, []string{manifests + "/overlays/cert-manager"}, []string{monitoring})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sameTable(t, tc.name, table(t, tc.want(t)), table(t, helmTemplate(t, tc.set...)))
		})
	}
}

// docsOverlay is the overlay docs/install.md gives for KubeVirt in another namespace
// (harvester-system), written into a directory of its own with its resource pointing at
// manifests/: the chart's kubevirt.namespace must render what the page tells kustomize users.
func docsOverlay(t *testing.T) []byte {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	const opening, placeholder = "# kustomization.yaml of your overlay\n", "<path or URL of migranet>/manifests"
	_, rest, found := strings.Cut(string(page), opening)
	overlay, _, closed := strings.Cut(rest, "```")
	if !found || !closed || !strings.Contains(overlay, placeholder) {
		t.Fatalf("docs/install.md has no overlay opening %q and naming %q", opening, placeholder)
	}
	dir := t.TempDir()
	manifests, err := relative(dir, filepath.Join(root, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	overlay = strings.ReplaceAll(overlay, placeholder, manifests)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	return kustomize(t, dir)
}

// TestMonitoringAddsItsObjects: monitoring.enabled adds exactly the objects manifests/monitoring
// renders on its own, and changes no other.
func TestMonitoringAddsItsObjects(t *testing.T) {
	off, on := table(t, helmTemplate(t)), table(t, helmTemplate(t, "monitoring.enabled=true"))
	alone := table(t, kustomizeWith(t, nil, []string{root + "/manifests/monitoring"}))
	added := map[string]any{}
	for k, v := range on {
		if w, ok := off[k]; !ok {
			added[k] = v
		} else if d := cmp.Diff(w, v); d != "" {
			t.Errorf("monitoring.enabled changes %s (-off +on):\n%s", k, d)
		}
	}
	for k := range off {
		if _, ok := on[k]; !ok {
			t.Errorf("monitoring.enabled drops %s", k)
		}
	}
	if len(alone) == 0 {
		t.Fatal("manifests/monitoring renders nothing")
	}
	if d := cmp.Diff(alone, added); d != "" {
		t.Errorf("monitoring.enabled adds other objects than manifests/monitoring's (-component +added):\n%s", d)
	}
}

// containers is every container of a Deployment's or DaemonSet's pod template, as decoded.
func containers(obj any) []map[string]any {
	spec, _ := obj.(map[string]any)["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	podSpec, _ := tmpl["spec"].(map[string]any)
	var out []map[string]any
	for _, field := range []string{"initContainers", "containers"} {
		list, _ := podSpec[field].([]any)
		for _, c := range list {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}

// TestValuesLand: the image lands in every container of the manager and the probe agent, the
// replicas in the Deployment, and nothing else changes.
func TestValuesLand(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		name     string
		set      []string
		image    string
		replicas float64
	}{
		{"tag, digest and replicas", []string{"image.repository=registry.invalid/migranet", "image.tag=v0.2.0", "image.digest=" + digest, "replicas=3"},
			"registry.invalid/migranet:v0.2.0@" + digest, 3},
		{"digest only", []string{"image.repository=registry.invalid/migranet", "image.tag=", "image.digest=" + digest},
			"registry.invalid/migranet@" + digest, 2},
		{"tag only, one replica", []string{"image.tag=v0.2.0", "replicas=1"}, "migranet:v0.2.0", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := table(t, kustomize(t, root+"/manifests"))
			n := 0
			for k, obj := range want {
				kind := strings.Fields(k)[1]
				if kind != "Deployment" && kind != "DaemonSet" {
					continue
				}
				for _, c := range containers(obj) {
					c["image"] = tc.image
					n++
				}
				if kind == "Deployment" {
					obj.(map[string]any)["spec"].(map[string]any)["replicas"] = tc.replicas
				}
			}
			if n != 2 {
				t.Errorf("kustomize renders %d containers, want 2 (the manager and the probe agent): update this test", n)
			}
			sameTable(t, tc.name, want, table(t, helmTemplate(t, tc.set...)))
		})
	}
}

// TestValuesRefused: values.schema.json refuses what would render a broken or surprising install.
func TestValuesRefused(t *testing.T) {
	for _, set := range []string{
		"certificates.issuer=certmanager",
		"image.digest=latest",
		"replicas=0",
		"monitoring.enable=true",
		"namespace=harvester-system",
		"kubevirt.namespace=Harvester_System",
	} {
		if out, err := helm(t, "template", "migranet", chartDir, "--set", set); err == nil {
			t.Errorf("helm template --set %s succeeded, want the schema to refuse it:\n%.300s", set, out)
		}
	}
}

// TestLint: helm lint --strict passes with the defaults and with every option on.
func TestLint(t *testing.T) {
	for _, set := range [][]string{nil, {"--set", "certificates.issuer=cert-manager", "--set", "monitoring.enabled=true"}} {
		if out, err := helm(t, append([]string{"lint", "--strict", chartDir}, set...)...); err != nil {
			t.Error(err)
		} else if !strings.Contains(string(out), "0 chart(s) failed") {
			t.Errorf("helm lint: %s", out)
		}
	}
}

// TestNamespacedObjectsNameTheirNamespace: helm puts an object without a namespace into the
// release's namespace, kubectl apply into the default one; every namespaced object of the chart
// names migranet's own, so the release's namespace changes nothing.
func TestNamespacedObjectsNameTheirNamespace(t *testing.T) {
	clusterScoped := map[string]bool{"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true,
		"ClusterRoleBinding": true, "ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
		"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	objs, err := SplitStream(helmTemplate(t, "certificates.issuer=cert-manager", "monitoring.enabled=true"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if !clusterScoped[o.Kind] && o.Namespace == "" {
			t.Errorf("%s names no namespace: it would land in the release's", o.Key())
		}
		if clusterScoped[o.Kind] && o.Namespace != "" {
			t.Errorf("%s is cluster-scoped yet names namespace %s", o.Key(), o.Namespace)
		}
	}
}
