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

// readmeRow is one row of the README's webhook table, backquotes removed: the manifests' cells
// (operations, scope, failurePolicy, timeoutSeconds, sideEffects) and the scope under OLM.
type readmeRow struct {
	manifests []string
	olm       string
}

// readmeWebhooks reads the README's webhook table, one row per webhook, by name.
func readmeWebhooks() map[string]readmeRow {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "README.md"))
	Expect(err).NotTo(HaveOccurred())
	const header = "| webhook | operations | scope | scope under OLM | failurePolicy | timeoutSeconds | sideEffects | why |"
	_, table, found := strings.Cut(string(data), header+"\n")
	Expect(found).To(BeTrue(), "the README's webhook table header %q", header)
	rows := map[string]readmeRow{}
	for _, line := range strings.Split(table, "\n")[1:] { // [0] is the |---| line
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "`", ""))
		}
		Expect(cells).To(HaveLen(8), "README row %q", line)
		rows[strings.Fields(cells[0])[0]] = readmeRow{ // "name (mutating)": the name
			manifests: []string{cells[1], cells[2], cells[4], cells[5], cells[6]},
			olm:       cells[3],
		}
	}
	return rows
}

// hook is what the README's table says of a validating or a mutating webhook.
type hook struct {
	name                              string
	rules                             []admissionregistrationv1.RuleWithOperations
	namespaceSelector, objectSelector *metav1.LabelSelector
	matchConditions                   int
	failurePolicy                     *admissionregistrationv1.FailurePolicyType
	timeoutSeconds                    *int32
	sideEffects                       *admissionregistrationv1.SideEffectClass
	admissionReviewVersions           []string
}

// renderedHooks reads every webhook of the rendered configurations, validating and mutating.
func renderedHooks(ctx context.Context) []hook {
	objs, err := env.RenderManifests(ctx, f.Binaries.Kubectl, "manifests")
	Expect(err).NotTo(HaveOccurred())
	var out []hook
	for _, o := range objs {
		switch o.GetKind() {
		case "ValidatingWebhookConfiguration":
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cfg)).To(Succeed())
			for _, w := range cfg.Webhooks {
				out = append(out, hook{w.Name, w.Rules, w.NamespaceSelector, w.ObjectSelector, len(w.MatchConditions), w.FailurePolicy, w.TimeoutSeconds, w.SideEffects, w.AdmissionReviewVersions})
			}
		case "MutatingWebhookConfiguration":
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cfg)).To(Succeed())
			for _, w := range cfg.Webhooks {
				out = append(out, hook{w.Name, w.Rules, w.NamespaceSelector, w.ObjectSelector, len(w.MatchConditions), w.FailurePolicy, w.TimeoutSeconds, w.SideEffects, w.AdmissionReviewVersions})
			}
		}
	}
	return out
}

// describeScope writes a webhook's selectors the way the README's scope column does.
func describeScope(w hook) string {
	var parts []string
	label := func(sel *metav1.LabelSelector) []string {
		var out []string
		for k, v := range sel.MatchLabels {
			out = append(out, k+": "+v)
		}
		slices.Sort(out)
		return out
	}
	if sel := w.namespaceSelector; sel != nil && len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
		Expect(sel.MatchExpressions).To(BeEmpty(), "describeScope knows matchLabels only")
		Expect(sel.MatchLabels).To(HaveLen(1))
		parts = append(parts, "namespace "+sel.MatchLabels["kubernetes.io/metadata.name"])
	}
	if sel := w.objectSelector; sel != nil && len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
		labels := label(sel)
		for _, e := range sel.MatchExpressions {
			switch e.Operator {
			case metav1.LabelSelectorOpIn:
				labels = append(labels, e.Key+" in ("+strings.Join(e.Values, ", ")+")")
			case metav1.LabelSelectorOpExists:
				labels = append(labels, e.Key+" exists")
			default:
				Fail("describeScope knows In and Exists only, not " + string(e.Operator))
			}
		}
		parts = append(parts, "label "+strings.Join(labels, ", "))
	}
	Expect(w.matchConditions).To(BeZero(), "describeScope knows selectors only")
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, ", ")
}

// cells is a webhook as the README's table writes it: operations and resources, scope,
// failurePolicy, timeoutSeconds, sideEffects.
func cells(w hook) []string {
	Expect(w.rules).To(HaveLen(1), "the README describes one rule per webhook")
	var ops []string
	for _, op := range w.rules[0].Operations {
		ops = append(ops, string(op))
	}
	Expect(w.failurePolicy).NotTo(BeNil(), "%s: failurePolicy", w.name)
	Expect(w.timeoutSeconds).NotTo(BeNil(), "%s: timeoutSeconds", w.name)
	Expect(w.sideEffects).NotTo(BeNil(), "%s: sideEffects", w.name)
	return []string{strings.Join(ops, ", ") + " " + strings.Join(w.rules[0].Resources, ", "), describeScope(w),
		string(*w.failurePolicy), fmt.Sprint(*w.timeoutSeconds), string(*w.sideEffects)}
}

// The fault caught: the README promising one thing of a webhook while the manifests do another
// (it once said sideEffects None for a webhook declared NoneOnDryRun).
var _ = Describe("the README's webhook table", func() {
	It("matches every webhook the default overlay renders, field by field", func(ctx context.Context) {
		hooks := renderedHooks(ctx)
		Expect(hooks).NotTo(BeEmpty())
		rows := readmeWebhooks()
		Expect(rows).To(HaveLen(len(hooks)), "one README row per webhook")
		for _, w := range hooks {
			Expect(rows).To(HaveKey(w.name))
			Expect(cells(w)).To(Equal(rows[w.name].manifests), "README row of %s (operations, scope, failurePolicy, timeoutSeconds, sideEffects)", w.name)
			Expect(w.admissionReviewVersions).To(Equal([]string{"v1"}))
		}
	})
})
