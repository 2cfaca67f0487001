package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
)

// readmeWebhooks reads the README's webhook table: one row per webhook, by name, each the cells
// operations, scope, failurePolicy, timeoutSeconds and sideEffects, with backquotes removed.
func readmeWebhooks() map[string][]string {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "README.md"))
	Expect(err).NotTo(HaveOccurred())
	const header = "| webhook | operations | scope | failurePolicy | timeoutSeconds | sideEffects | why |"
	_, table, found := strings.Cut(string(data), header+"\n")
	Expect(found).To(BeTrue(), "the README's webhook table header %q", header)
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n")[1:] { // [0] is the |---| line
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "`", ""))
		}
		rows[cells[0]] = cells[1:6]
	}
	return rows
}

// describeScope writes a webhook's selectors the way the README's scope column does.
func describeScope(w admissionregistrationv1.ValidatingWebhook) string {
	var parts []string
	label := func(sel *metav1.LabelSelector) []string {
		var out []string
		for k, v := range sel.MatchLabels {
			out = append(out, k+": "+v)
		}
		slices.Sort(out)
		return out
	}
	if sel := w.NamespaceSelector; sel != nil && len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
		Expect(sel.MatchExpressions).To(BeEmpty(), "describeScope knows matchLabels only")
		Expect(sel.MatchLabels).To(HaveLen(1))
		parts = append(parts, "namespace "+sel.MatchLabels["kubernetes.io/metadata.name"])
	}
	if sel := w.ObjectSelector; sel != nil && len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
		Expect(sel.MatchExpressions).To(BeEmpty(), "describeScope knows matchLabels only")
		parts = append(parts, "label "+strings.Join(label(sel), ", "))
	}
	Expect(w.MatchConditions).To(BeEmpty(), "describeScope knows selectors only")
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, ", ")
}

// The fault caught: the README promising one thing of a webhook while the manifests do another
// (it once said sideEffects None for a webhook declared NoneOnDryRun).
var _ = Describe("the README's webhook table", func() {
	It("matches every webhook the default overlay renders, field by field", func(ctx context.Context) {
		objs, err := env.RenderManifests(ctx, c.Binaries.Kubectl, "manifests")
		Expect(err).NotTo(HaveOccurred())
		var cfg *admissionregistrationv1.ValidatingWebhookConfiguration
		for _, o := range objs {
			if o.GetKind() == "ValidatingWebhookConfiguration" {
				cfg = &admissionregistrationv1.ValidatingWebhookConfiguration{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cfg)).To(Succeed())
			}
		}
		Expect(cfg).NotTo(BeNil())
		rows := readmeWebhooks()
		Expect(rows).To(HaveLen(len(cfg.Webhooks)), "one README row per webhook")
		for _, w := range cfg.Webhooks {
			Expect(rows).To(HaveKey(w.Name))
			Expect(w.Rules).To(HaveLen(1), "the README describes one rule per webhook")
			var ops []string
			for _, op := range w.Rules[0].Operations {
				ops = append(ops, string(op))
			}
			got := []string{strings.Join(ops, ", ") + " " + strings.Join(w.Rules[0].Resources, ", "), describeScope(w),
				string(*w.FailurePolicy), fmt.Sprint(*w.TimeoutSeconds), string(*w.SideEffects)}
			Expect(got).To(Equal(rows[w.Name]), "README row of %s (operations, scope, failurePolicy, timeoutSeconds, sideEffects)", w.Name)
			Expect(w.AdmissionReviewVersions).To(Equal([]string{"v1"}))
		}
	})
})
