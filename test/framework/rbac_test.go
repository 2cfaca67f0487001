package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// event is an audited request of verb on resource (subresource after a slash) of group in ns.
func event(verb, ns, group, resource, sub, name string) AuditEvent {
	e := AuditEvent{Verb: verb}
	e.ObjectRef = &struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	}{Resource: resource, Namespace: ns, Name: name, APIGroup: group, Subresource: sub}
	return e
}

// The fault it catches: a permission the suite must use counted as used by a request of another
// verb, group, namespace or subresource.
func TestUnusedUses(t *testing.T) {
	hco := RBACUse{Namespace: "kubevirt", Group: "hco.kubevirt.io", Resource: "hyperconvergeds", Verbs: []string{"get", "patch"}, Why: "HCO mode"}
	status := RBACUse{Group: "migranet.io", Resource: "settings/status", Verbs: []string{"patch"}, Why: "status"}
	for _, tc := range []struct {
		name   string
		events []AuditEvent
		want   []string
	}{
		{name: "all used", events: []AuditEvent{
			event("get", "kubevirt", "hco.kubevirt.io", "hyperconvergeds", "", "x"),
			event("patch", "kubevirt", "hco.kubevirt.io", "hyperconvergeds", "", "x"),
			event("patch", "", "migranet.io", "settings", "status", "s")}},
		{name: "none used", want: []string{"get hyperconvergeds.hco.kubevirt.io (HCO mode)",
			"patch hyperconvergeds.hco.kubevirt.io (HCO mode)", "patch settings.migranet.io/status (status)"}},
		{name: "other namespace, other group, main resource", events: []AuditEvent{
			event("get", "default", "hco.kubevirt.io", "hyperconvergeds", "", "x"),
			event("patch", "kubevirt", "kubevirt.io", "hyperconvergeds", "", "x"),
			event("patch", "", "migranet.io", "settings", "", "s")},
			want: []string{"get hyperconvergeds.hco.kubevirt.io (HCO mode)",
				"patch hyperconvergeds.hco.kubevirt.io (HCO mode)", "patch settings.migranet.io/status (status)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, unusedUses([]RBACUse{hco, status}, tc.events)); diff != "" {
				t.Errorf("unusedUses (-want +got):\n%s", diff)
			}
		})
	}
}

// The fault it catches: an unused generated permission let through (an exemption too wide, a
// named grant used by a request for another name), or a used one reported.
func TestUnusedGrants(t *testing.T) {
	grants, err := generatedGrants()
	if err != nil {
		t.Fatal(err)
	}
	want := []grant{
		{"kubevirt", "hco.kubevirt.io", "hyperconvergeds", "patch", ""},
		{"default", "", "services", "get", "kubernetes"},
		{"", "migranet.io", "settings/status", "patch", ""},
	}
	for _, g := range want {
		if !containsGrant(grants, g) {
			t.Fatalf("manifests/rbac/role.yaml: no grant %s among %d", g, len(grants))
		}
	}
	events := []AuditEvent{
		event("get", "default", "", "services", "", "other"),
		event("patch", "", "migranet.io", "settings", "status", "vm-migration-network"),
	}
	exempt := []RBACUse{{Namespace: "kubevirt", Group: "hco.kubevirt.io", Resource: "hyperconvergeds", Verbs: []string{"patch"}}}
	got := unusedGrants(want, exempt, events)
	if diff := cmp.Diff([]string{"get services. named kubernetes in default"}, got); diff != "" {
		t.Errorf("unusedGrants (-want +got):\n%s", diff)
	}
	exempt[0].Namespace = "openshift-cnv"
	if got := unusedGrants(want[:1], exempt, nil); len(got) != 1 {
		t.Errorf("an exemption for another namespace let %v through", want[0])
	}
}

func containsGrant(grants []grant, g grant) bool {
	for _, h := range grants {
		if h == g {
			return true
		}
	}
	return false
}
