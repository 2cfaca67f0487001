package openshift

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/migranet/migranet/test/chart"
)

// bundleKinds are the kinds OLM v0 creates from a bundle besides the CSV and CRDs, in the
// InstallPlan's namespace for namespaced ones (operator-lifecycle-manager
// pkg/controller/operators/catalog/operator.go ExecutePlan, and supportedresources.go). Everything
// else (Namespace, DaemonSet, ValidatingAdmissionPolicy, objects of other namespaces) goes to
// extras.yaml.
var bundleKinds = map[string]bool{
	"Secret": true, "ClusterRole": true, "ClusterRoleBinding": true, "ConfigMap": true, "ServiceAccount": true,
	"Service": true, "Role": true, "RoleBinding": true, "PrometheusRule": true, "ServiceMonitor": true,
	"PodDisruptionBudget": true, "PriorityClass": true, "VerticalPodAutoscaler": true, "NetworkPolicy": true,
}

type builder struct {
	version    string
	files      map[string][]byte
	objs       []chart.Object
	crds       []map[string]any
	deployment map[string]any
	webhooks   []map[string]any
}

// place sorts one rendered object into the bundle, the CSV or the extras (resolved in finish).
func (b *builder) place(o chart.Object) error {
	switch o.Kind {
	case "CustomResourceDefinition":
		m, err := decode(o)
		if err != nil {
			return err
		}
		b.crds = append(b.crds, m)
		b.files["bundle/manifests/"+o.Name+".yaml"] = []byte(header + o.Text)
		return nil
	case "Deployment":
		if o.Namespace != managerNamespace || o.Name != managerDeployment {
			return fmt.Errorf("the CSV carries the manager's Deployment %s/%s only", managerNamespace, managerDeployment)
		}
		m, err := decode(o)
		if err != nil {
			return err
		}
		b.deployment = m
		return nil
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		m, err := decode(o)
		if err != nil {
			return err
		}
		return b.addWebhooks(o.Kind, m)
	}
	b.objs = append(b.objs, o)
	return nil
}

// addWebhooks turns each webhook of a configuration into a webhook definition served by the
// manager's Deployment. OLM names the Service <deployment>-service, port containerPort, and sets
// the namespace selector from the OperatorGroup (all namespaces for AllNamespaces): the
// configuration's namespaceSelector is not carried (docs/install.md says what that changes).
func (b *builder) addWebhooks(kind string, cfg map[string]any) error {
	typ := map[string]string{"ValidatingWebhookConfiguration": "ValidatingAdmissionWebhook", "MutatingWebhookConfiguration": "MutatingAdmissionWebhook"}[kind]
	list, _ := cfg["webhooks"].([]any)
	for _, item := range list {
		w, _ := item.(map[string]any)
		svc, _ := dig(w, "clientConfig", "service").(map[string]any)
		if svc == nil || svc["name"] != webhookService {
			return fmt.Errorf("webhook %v is not served by the Service %s", w["name"], webhookService)
		}
		d := map[string]any{
			"generateName":   w["name"],
			"type":           typ,
			"deploymentName": managerDeployment,
			"containerPort":  443,
			"targetPort":     "webhook",
		}
		if p, ok := svc["path"]; ok {
			d["webhookPath"] = p
		}
		for _, k := range []string{"admissionReviewVersions", "failurePolicy", "matchPolicy", "objectSelector", "reinvocationPolicy", "rules", "sideEffects", "timeoutSeconds"} {
			if v, ok := w[k]; ok {
				d[k] = v
			}
		}
		b.webhooks = append(b.webhooks, d)
	}
	return nil
}

// boundTo returns the subjects' "namespace/name" of the bindings of a role kind/name.
func (b *builder) boundTo(bindingKind, roleKind, roleName, namespace string) ([]string, error) {
	var subjects []string
	for _, o := range b.objs {
		if o.Kind != bindingKind || o.Namespace != namespace {
			continue
		}
		m, err := decode(o)
		if err != nil {
			return nil, err
		}
		if dig(m, "roleRef", "kind") != roleKind || dig(m, "roleRef", "name") != roleName {
			continue
		}
		list, _ := m["subjects"].([]any)
		for _, s := range list {
			s, _ := s.(map[string]any)
			subjects = append(subjects, fmt.Sprintf("%v/%v/%v", s["kind"], s["namespace"], s["name"]))
		}
	}
	return subjects, nil
}

// finish resolves the RBAC and writes the CSV, the bundle's other objects, its metadata and the extras.
func (b *builder) finish() (map[string][]byte, error) {
	if b.deployment == nil {
		return nil, fmt.Errorf("no Deployment %s/%s in the rendering", managerNamespace, managerDeployment)
	}
	manager := "ServiceAccount/" + managerNamespace + "/" + managerAccount
	var clusterPerms, perms []any
	inCSV := map[string]bool{} // Key() of objects the CSV carries
	var bundled, extras []chart.Object
	for _, o := range b.objs {
		switch {
		case o.Kind == "ClusterRole" || (o.Kind == "Role" && o.Namespace == managerNamespace):
			binding := "ClusterRoleBinding"
			if o.Kind == "Role" {
				binding = "RoleBinding"
			}
			subjects, err := b.boundTo(binding, o.Kind, o.Name, o.Namespace)
			if err != nil {
				return nil, err
			}
			if len(subjects) == 1 && subjects[0] == manager {
				m, err := decode(o)
				if err != nil {
					return nil, err
				}
				p := map[string]any{"serviceAccountName": managerAccount, "rules": m["rules"]}
				if o.Kind == "Role" {
					perms = append(perms, p)
				} else {
					clusterPerms = append(clusterPerms, p)
				}
				inCSV[o.Key()] = true
				continue
			}
			if slicesContain(subjects, manager) {
				return nil, fmt.Errorf("%s is bound to the manager and others (%v): the CSV cannot carry it", o.Key(), subjects)
			}
		}
	}
	for _, o := range b.objs {
		switch {
		case inCSV[o.Key()]:
		case (o.Kind == "ClusterRoleBinding" || o.Kind == "RoleBinding") && b.bindsCarried(o, inCSV):
			// OLM binds the permissions' rules to the service account itself.
		case o.Namespace == managerNamespace && o.Kind == "ServiceAccount" && o.Name == managerAccount:
			// OLM creates the service account the permissions name.
		case o.Kind == "Namespace" && o.Name == managerNamespace:
			// The admin's OperatorGroup namespace.
		case o.Namespace == managerNamespace && o.Kind == "Service" && o.Name == webhookService:
			// OLM creates the webhooks' Service, <deployment>-service.
		case bundleKinds[o.Kind] && (o.Namespace == "" || o.Namespace == managerNamespace) && !b.boundElsewhere(o):
			bundled = append(bundled, o)
		default:
			extras = append(extras, o)
		}
	}
	for _, o := range bundled {
		text, err := withoutNamespace(o)
		if err != nil {
			return nil, err
		}
		b.files[fileName(o)] = []byte(header + text)
	}
	csv, err := b.csv(clusterPerms, perms)
	if err != nil {
		return nil, err
	}
	b.files[csvFile] = csv
	b.files[annotations] = []byte(header + annotationsYAML)
	b.files[dockerfile] = []byte(header + dockerfileText)
	b.files[ExtrasFile] = extrasFile(extras)
	return b.files, nil
}

// bindsCarried: the binding binds a role the CSV carries.
func (b *builder) bindsCarried(o chart.Object, inCSV map[string]bool) bool {
	m, err := decode(o)
	if err != nil {
		return false
	}
	role := chart.Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: fmt.Sprint(dig(m, "roleRef", "kind")), Name: fmt.Sprint(dig(m, "roleRef", "name"))}
	if role.Kind == "Role" {
		role.Namespace = o.Namespace
	}
	return inCSV[role.Key()]
}

// boundElsewhere: a ClusterRole bound to a subject of the extras (the probe agent) goes with them,
// so that the extras grant it whole.
func (b *builder) boundElsewhere(o chart.Object) bool {
	if o.Kind != "ClusterRole" {
		return o.Kind == "ClusterRoleBinding"
	}
	subjects, err := b.boundTo("ClusterRoleBinding", "ClusterRole", o.Name, "")
	return err != nil || len(subjects) > 0
}

// withoutNamespace is the object's YAML without metadata.namespace (OLM sets the install namespace).
func withoutNamespace(o chart.Object) (string, error) {
	if o.Namespace == "" {
		return o.Text, nil
	}
	var kept []string
	for _, line := range strings.SplitAfter(o.Text, "\n") {
		if line != "  namespace: "+o.Namespace+"\n" {
			kept = append(kept, line)
		}
	}
	text := strings.Join(kept, "")
	if strings.Count(o.Text, "\n")-strings.Count(text, "\n") != 1 {
		return "", fmt.Errorf("%s: expected one metadata.namespace line", o.Key())
	}
	return text, nil
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// marshal is yaml of v (keys sorted: the same input gives the same bytes).
func marshal(v any) ([]byte, error) { return yaml.Marshal(v) }

func sortedStrings(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
