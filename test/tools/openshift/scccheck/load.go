package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	securityv1 "github.com/openshift/api/security/v1"
	"github.com/openshift/apiserver-library-go/pkg/securitycontextconstraints/sccdefaults"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The namespace annotations OpenShift's namespace SCC allocation controller (cluster-policy-
// controller, namespace-security-allocation-controller) writes on every namespace: a block of
// 10,000 UIDs out of 1000000000-1999999999 (the default range), the same block as supplemental
// groups, and an SELinux MCS level. SCCs with MustRunAsRange / MustRunAs strategies take their
// values from there. The values are one block as a cluster would hand it out.
var openShiftNamespaceAnnotations = map[string]string{
	securityv1.UIDRangeAnnotation:           "1000680000/10000",
	securityv1.SupplementalGroupsAnnotation: "1000680000/10000",
	securityv1.MCSAnnotation:                "s0:c26,c15",
}

// workload is a Deployment's or DaemonSet's pod template.
type workload struct {
	kind, namespace, name string
	template              corev1.PodTemplateSpec
}

// input is what the SCC admission sees: the SCCs, the namespaces, the RBAC, the workloads.
type input struct {
	sccs                []*securityv1.SecurityContextConstraints
	namespaces          map[string]*corev1.Namespace
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	workloads           map[string]workload // by KIND/NAMESPACE/NAME
}

// load reads every YAML file of sccDir and the manifests file.
func load(sccDir, manifests string) (*input, error) {
	files, err := filepath.Glob(filepath.Join(sccDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("-sccs %s holds no *.yaml", sccDir)
	}
	sort.Strings(files)
	in := &input{namespaces: map[string]*corev1.Namespace{}, workloads: map[string]workload{}}
	for _, f := range append(files, manifests) {
		if err := in.read(f); err != nil {
			return nil, err
		}
	}
	if len(in.sccs) == 0 {
		return nil, fmt.Errorf("no SecurityContextConstraints in %s", sccDir)
	}
	for _, w := range in.workloads {
		if in.namespaces[w.namespace] == nil {
			in.namespaces[w.namespace] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.namespace}}
		}
	}
	for _, ns := range in.namespaces {
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		for k, v := range openShiftNamespaceAnnotations {
			if _, ok := ns.Annotations[k]; !ok {
				ns.Annotations[k] = v
			}
		}
	}
	return in, nil
}

// read adds the objects of one YAML stream.
func (in *input) read(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if err := in.add(doc); err != nil {
			return fmt.Errorf("%s: document %d: %w", path, i, err)
		}
	}
}

// add decodes one document into the kind it names; other kinds are skipped.
func (in *input) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.Kind {
	case "SecurityContextConstraints":
		scc := &securityv1.SecurityContextConstraints{}
		if err := yaml.UnmarshalStrict(doc, scc); err != nil {
			return err
		}
		sccdefaults.SetDefaults_SCC(scc)
		in.sccs = append(in.sccs, scc)
	case "Namespace":
		ns := &corev1.Namespace{}
		if err := yaml.UnmarshalStrict(doc, ns); err != nil {
			return err
		}
		in.namespaces[ns.Name] = ns
	case "Role":
		return decodeInto(doc, &in.roles)
	case "RoleBinding":
		return decodeInto(doc, &in.roleBindings)
	case "ClusterRole":
		return decodeInto(doc, &in.clusterRoles)
	case "ClusterRoleBinding":
		return decodeInto(doc, &in.clusterRoleBindings)
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(doc, d); err != nil {
			return err
		}
		in.addWorkload("Deployment", d.ObjectMeta, d.Spec.Template)
	case "DaemonSet":
		d := &appsv1.DaemonSet{}
		if err := yaml.UnmarshalStrict(doc, d); err != nil {
			return err
		}
		in.addWorkload("DaemonSet", d.ObjectMeta, d.Spec.Template)
	}
	return nil
}

// decodeInto decodes doc as a T and appends it to list.
func decodeInto[T any](doc []byte, list *[]*T) error {
	obj := new(T)
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return err
	}
	*list = append(*list, obj)
	return nil
}

func (in *input) addWorkload(kind string, m metav1.ObjectMeta, t corev1.PodTemplateSpec) {
	in.workloads[kind+"/"+m.Namespace+"/"+m.Name] = workload{kind: kind, namespace: m.Namespace, name: m.Name, template: t}
}
