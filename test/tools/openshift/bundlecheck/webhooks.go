package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/google/go-cmp/cmp"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// checkWebhookDeployments returns a problem for every webhook definition that names no Deployment
// of the install strategy, or whose target port none of that Deployment's containers exposes.
func checkWebhookDeployments(b *manifests.Bundle) []string {
	deployments := map[string]map[string]bool{} // name → its container ports, by name and number
	for _, d := range b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		ports := map[string]bool{}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				ports[p.Name], ports[fmt.Sprint(p.ContainerPort)] = true, true
			}
		}
		deployments[d.Name] = ports
	}
	var problems []string
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		ports, ok := deployments[w.DeploymentName]
		if !ok {
			problems = append(problems, fmt.Sprintf("webhook %s: deploymentName %q is no Deployment of the install strategy (OLM serves a webhook through the Service and certificate of the Deployment it names)", w.GenerateName, w.DeploymentName))
			continue
		}
		target := intstr.FromInt32(w.ContainerPort)
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		if !ports[target.String()] {
			problems = append(problems, fmt.Sprintf("webhook %s: targetPort %s is no container port of Deployment %s", w.GenerateName, target.String(), w.DeploymentName))
		}
	}
	return problems
}

// carried is what a webhook definition keeps of a webhook configuration's webhook. The namespace
// selector is not among them: OLM sets it from the OperatorGroup (WebhookDescription.GetValidatingWebhook).
type carried struct {
	Type           v1alpha1.WebhookAdmissionType
	Path           string
	Rules          []admissionregistrationv1.RuleWithOperations
	FailurePolicy  string
	SideEffects    string
	TimeoutSeconds int32
	ObjectSelector *metav1.LabelSelector
	Reinvocation   string
	ReviewVersions []string
}

// checkWebhooksCarried compares the CSV's webhook definitions with the webhooks of the rendered
// configurations in path.
func checkWebhooksCarried(b *manifests.Bundle, path string) ([]string, error) {
	want, err := renderedWebhooks(path)
	if err != nil {
		return nil, err
	}
	got := map[string]carried{}
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		got[w.GenerateName] = carried{
			Type: w.Type, Path: deref(w.WebhookPath), Rules: w.Rules, FailurePolicy: string(derefT(w.FailurePolicy)),
			SideEffects: string(derefT(w.SideEffects)), TimeoutSeconds: derefT(w.TimeoutSeconds), ObjectSelector: w.ObjectSelector,
			Reinvocation: string(derefT(w.ReinvocationPolicy)), ReviewVersions: w.AdmissionReviewVersions,
		}
	}
	var problems []string
	for _, name := range sortedKeys(want) {
		g, ok := got[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("webhook %s of %s is not in the CSV's webhookdefinitions", name, path))
			continue
		}
		if d := cmp.Diff(want[name], g); d != "" {
			problems = append(problems, fmt.Sprintf("webhook %s: the CSV's definition differs from %s (-rendered +CSV):\n%s", name, path, d))
		}
	}
	for _, name := range sortedKeys(got) {
		if _, ok := want[name]; !ok {
			problems = append(problems, fmt.Sprintf("webhook %s of the CSV is in no webhook configuration of %s", name, path))
		}
	}
	return problems, nil
}

func renderedWebhooks(path string) (map[string]carried, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]carried{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch tm.Kind {
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for _, w := range c.Webhooks {
				out[w.Name] = carried{Type: v1alpha1.ValidatingAdmissionWebhook, Path: svcPath(w.ClientConfig), Rules: w.Rules,
					FailurePolicy: string(derefT(w.FailurePolicy)), SideEffects: string(derefT(w.SideEffects)), TimeoutSeconds: derefT(w.TimeoutSeconds),
					ObjectSelector: w.ObjectSelector, ReviewVersions: w.AdmissionReviewVersions}
			}
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for _, w := range c.Webhooks {
				out[w.Name] = carried{Type: v1alpha1.MutatingAdmissionWebhook, Path: svcPath(w.ClientConfig), Rules: w.Rules,
					FailurePolicy: string(derefT(w.FailurePolicy)), SideEffects: string(derefT(w.SideEffects)), TimeoutSeconds: derefT(w.TimeoutSeconds),
					ObjectSelector: w.ObjectSelector, Reinvocation: string(derefT(w.ReinvocationPolicy)), ReviewVersions: w.AdmissionReviewVersions}
			}
		}
	}
}

func svcPath(c admissionregistrationv1.WebhookClientConfig) string {
	if c.Service == nil {
		return ""
	}
	return deref(c.Service.Path)
}

func deref(s *string) string { return derefT(s) }

func derefT[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
