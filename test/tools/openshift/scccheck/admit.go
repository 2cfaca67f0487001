package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/openshift/apiserver-library-go/pkg/securitycontextconstraints/sccmatching"
	sccsort "github.com/openshift/apiserver-library-go/pkg/securitycontextconstraints/util/sort"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kapi "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // v1 defaults and conversions in legacyscheme
	rbacvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

// controllerUser is who creates a workload's pods: the kube-controller-manager's controller service
// account. It is authenticated, so it may use restricted-v2 (the grant to system:authenticated);
// in sccadmission, an SCC applies when the pod's service account or the requesting user may use it
// (scc_authz_check.go, allowedForType).
func controllerUser(kind string) user.Info {
	name := map[string]string{"Deployment": "replicaset-controller", "DaemonSet": "daemon-set-controller"}[kind]
	u := serviceaccount.UserInfo("kube-system", name, "")
	return &user.DefaultInfo{Name: u.GetName(), Groups: append(u.GetGroups(), user.AllAuthenticated)}
}

// result is what the admission made of one workload's pod.
type result struct {
	scc      string            // the SCC that admitted it ("" none)
	assigned []string          // fields the SCC filled from the namespace's allocation
	changed  string            // anything else the SCC changed (a diff), "" none
	refusals map[string]string // SCC → why it did not admit the pod (or may not be used)
}

// judge returns why the result is not what want expects, "" when it is.
func (r result) judge(want string) string {
	why := func() string {
		var names []string
		for n := range r.refusals {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "\n  %s: %s", n, r.refusals[n])
		}
		return b.String()
	}
	switch {
	case r.scc == "":
		return "no SCC admits its pod:" + why()
	case r.scc != want:
		return fmt.Sprintf("admitted by %s, want %s:%s", r.scc, want, why())
	case r.changed != "":
		return fmt.Sprintf("admitted by %s only after it changed the pod (set these in the manifest as the SCC wants them; -declared +admitted):\n%s", r.scc, r.changed)
	}
	return ""
}

// admit runs the pod of w through the SCCs in the order and with the rules of sccadmission's
// computeSecurityContext for a create (openshift/apiserver-library-go, sccadmission/admission.go):
// SCCs sorted by priority (sccsort.ByPriority), providers made with the namespace's allocation
// (sccmatching.CreateProviderFromConstraint), an SCC skipped unless the pod's service account or
// the requesting user may use it (sccmatching.ConstraintAppliesTo with an RBAC authorizer over the
// manifests' RBAC and OpenShift's grants), the first whose sccmatching.AssignSecurityContext
// returns no error admits the pod, mutations included.
func admit(in *input, w workload) (result, error) {
	ns := in.namespaces[w.namespace]
	pod, err := internalPod(w)
	if err != nil {
		return result{}, err
	}
	_, roles := rbacvalidation.NewTestRuleResolver(in.roles, in.roleBindings, in.clusterRoles, in.clusterRoleBindings)
	authz := rbac.New(roles, roles, roles, roles)
	sccs := append(sccsort.ByPriority(nil), in.sccs...)
	sort.Sort(sccsort.ByPriority(sccs))
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	saUser := serviceaccount.UserInfo(w.namespace, sa, "")
	requester := controllerUser(w.kind)
	res := result{refusals: map[string]string{}}
	ctx := context.Background()
	for _, scc := range sccs {
		if !usable(ctx, authz, scc.Name, scc.Users, scc.Groups, w.namespace, saUser, requester) {
			res.refusals[scc.Name] = fmt.Sprintf("neither %s nor %s may use it (RBAC verb use on securitycontextconstraints/%s)", saUser.GetName(), requester.GetName(), scc.Name)
			continue
		}
		provider, err := sccmatching.CreateProviderFromConstraint(ns, scc)
		if err != nil {
			return result{}, err
		}
		admitted := pod.DeepCopy()
		if errs := sccmatching.AssignSecurityContext(provider, admitted, field.NewPath("pod")); len(errs) > 0 {
			res.refusals[scc.Name] = errs.ToAggregate().Error()
			continue
		}
		res.scc = scc.Name
		res.assigned, res.changed = compare(pod, admitted)
		return res, nil
	}
	return res, nil
}

func usable(ctx context.Context, a authorizer.Authorizer, name string, users, groups []string, namespace string, who ...user.Info) bool {
	for _, u := range who {
		if sccmatching.ConstraintAppliesTo(ctx, name, users, groups, u, namespace, a) {
			return true
		}
	}
	return false
}

// internalPod is the pod the workload's controller creates, defaulted as the API server defaults
// it before admission, in the internal API version the SCC code works on.
func internalPod(w workload) (*kapi.Pod, error) {
	v1pod := &corev1.Pod{ObjectMeta: *w.template.ObjectMeta.DeepCopy(), Spec: *w.template.Spec.DeepCopy()}
	v1pod.Namespace, v1pod.GenerateName = w.namespace, w.name+"-"
	legacyscheme.Scheme.Default(v1pod)
	pod := &kapi.Pod{}
	if err := legacyscheme.Scheme.Convert(v1pod, pod, nil); err != nil {
		return nil, fmt.Errorf("converting the pod of %s %s/%s: %w", w.kind, w.namespace, w.name, err)
	}
	return pod, nil
}

// compare returns the fields the SCC filled from the namespace's allocation (unset in the manifest:
// UIDs, groups, SELinux level, annotations) and a diff of every other change.
func compare(declared, admitted *kapi.Pod) ([]string, string) {
	d, a := declared.DeepCopy(), admitted.DeepCopy()
	var assigned []string
	take := func(path string, was, is any, clear func()) {
		if equality.Semantic.DeepEqual(was, is) {
			return
		}
		if isNil(was) {
			assigned = append(assigned, path)
			clear()
		}
	}
	if d.Spec.SecurityContext == nil {
		d.Spec.SecurityContext = &kapi.PodSecurityContext{}
	}
	if a.Spec.SecurityContext == nil {
		a.Spec.SecurityContext = &kapi.PodSecurityContext{}
	}
	dp, ap := d.Spec.SecurityContext, a.Spec.SecurityContext
	take("spec.securityContext.runAsUser", dp.RunAsUser, ap.RunAsUser, func() { ap.RunAsUser = nil })
	take("spec.securityContext.fsGroup", dp.FSGroup, ap.FSGroup, func() { ap.FSGroup = nil })
	take("spec.securityContext.seLinuxOptions", dp.SELinuxOptions, ap.SELinuxOptions, func() { ap.SELinuxOptions = nil })
	if len(dp.SupplementalGroups) == 0 && len(ap.SupplementalGroups) > 0 {
		assigned, ap.SupplementalGroups = append(assigned, "spec.securityContext.supplementalGroups"), nil
	}
	if !equality.Semantic.DeepEqual(d.Annotations, a.Annotations) {
		assigned, d.Annotations, a.Annotations = append(assigned, "metadata.annotations"), nil, nil
	}
	for i := range a.Spec.Containers {
		dc, ac := d.Spec.Containers[i].SecurityContext, a.Spec.Containers[i].SecurityContext
		if dc == nil {
			dc = &kapi.SecurityContext{}
			d.Spec.Containers[i].SecurityContext = dc
		}
		if ac == nil {
			continue
		}
		p := fmt.Sprintf("spec.containers[%s].securityContext.", a.Spec.Containers[i].Name)
		take(p+"runAsUser", dc.RunAsUser, ac.RunAsUser, func() { ac.RunAsUser = nil })
		take(p+"seLinuxOptions", dc.SELinuxOptions, ac.SELinuxOptions, func() { ac.SELinuxOptions = nil })
	}
	if equality.Semantic.DeepEqual(d, a) {
		return assigned, ""
	}
	// The SCC code leaves an empty security context where the manifest had none: not a change.
	return assigned, cmp.Diff(d.Spec, a.Spec)
}

func isNil(v any) bool {
	switch v := v.(type) {
	case *int64:
		return v == nil
	case *kapi.SELinuxOptions:
		return v == nil
	}
	return v == nil
}
