package openshift

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestBundleIsGenerated fails when manifests/olm is not what `make bundle` writes from manifests/
// (make verify checks it too; this names the file).
func TestBundleIsGenerated(t *testing.T) {
	files, err := GenerateFromTree(context.Background(), kubectl(t), root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "manifests", "olm")
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		have, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(have, files[name]) {
			t.Errorf("manifests/olm/%s is not what manifests/ generates (%v): run make bundle", name, err)
		}
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			if _, ok := files[rel]; !ok {
				t.Errorf("manifests/olm/%s is no longer generated: run make bundle", rel)
			}
		}
		return nil
	})
}

// TestBundleValidates runs the generated bundle through bundlecheck (the operator framework's
// bundle loader and validators, plus the webhook checks OLM's install needs), as generated and
// once per fault; each fault must fail, naming why.
func TestBundleValidates(t *testing.T) {
	bundlecheck := filepath.Join(tool(t, "openshift"), "bundlecheck")
	files, err := GenerateFromTree(context.Background(), kubectl(t), root)
	if err != nil {
		t.Fatal(err)
	}
	webhooks := writeTemp(t, "rendered.yaml", renderOpenShift(t))
	csv := func(fn func(t *testing.T, csv map[string]any)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, csvFile)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := yaml.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			fn(t, m)
			if data, err = yaml.Marshal(m); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	webhook := func(t *testing.T, m map[string]any, name string) map[string]any {
		for _, w := range at(t, m, "spec")["webhookdefinitions"].([]any) {
			if w := w.(map[string]any); w["generateName"] == name {
				return w
			}
		}
		t.Fatalf("no webhook definition %s", name)
		return nil
	}
	cases := []struct {
		name   string
		fault  func(t *testing.T, dir string)
		expect string // "" passes; else a part of the failure
	}{
		{name: "as generated"},
		{name: "CSV without its required displayName", expect: "Field Spec.DisplayName, Value field: required field missing",
			fault: csv(func(t *testing.T, m map[string]any) { delete(at(t, m, "spec"), "displayName") })},
		{name: "CSV named against the DNS rules", expect: "metadata.name",
			fault: csv(func(t *testing.T, m map[string]any) { at(t, m, "metadata")["name"] = "Migranet_v0.1.0" })},
		{name: "webhook served by a Deployment the CSV does not install", expect: `deploymentName "migranet-manager" is no Deployment`,
			fault: csv(func(t *testing.T, m map[string]any) {
				webhook(t, m, "settings.migranet.io")["deploymentName"] = "migranet-manager"
			})},
		{name: "webhook on a port the manager does not expose", expect: "targetPort metrics-tls is no container port",
			fault: csv(func(t *testing.T, m map[string]any) { webhook(t, m, "vmim.migranet.io")["targetPort"] = "metrics-tls" })},
		{name: "webhook left out of the CSV", expect: "webhook steer.migranet.io of",
			fault: csv(func(t *testing.T, m map[string]any) {
				spec := at(t, m, "spec")
				var kept []any
				for _, w := range spec["webhookdefinitions"].([]any) {
					if w.(map[string]any)["generateName"] != "steer.migranet.io" {
						kept = append(kept, w)
					}
				}
				spec["webhookdefinitions"] = kept
			})},
		// Near miss: the right webhook with another webhook's failure policy.
		{name: "webhook with another failure policy", expect: "webhook settings.migranet.io: the CSV's definition differs",
			fault: csv(func(t *testing.T, m map[string]any) {
				webhook(t, m, "settings.migranet.io")["failurePolicy"] = "Ignore"
			})},
		{name: "owned CRD missing from the bundle", expect: "owned CRD",
			fault: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "bundle", "manifests", "pathreports.migranet.io.yaml")); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(dir, files); err != nil {
				t.Fatal(err)
			}
			if c.fault != nil {
				c.fault(t, dir)
			}
			code, out := runChecker(t, bundlecheck, "-bundle", filepath.Join(dir, BundleDir), "-webhooks", webhooks)
			switch {
			case c.expect == "" && code != 0:
				t.Fatalf("bundlecheck exit %d:\n%s", code, out)
			case c.expect != "" && code != 1:
				t.Fatalf("bundlecheck exit %d, want 1 (%q):\n%s", code, c.expect, out)
			case c.expect != "" && !strings.Contains(out, c.expect):
				t.Fatalf("bundlecheck's failure does not say %q:\n%s", c.expect, out)
			}
			t.Log(out)
		})
	}
}
