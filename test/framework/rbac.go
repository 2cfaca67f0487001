package framework

import (
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified

	"github.com/migranet/migranet/test/env"
)

// RBAC is a suite's check of migranet's requests (env.ManagerUser) in the audit log once its
// specs are done: RBAC refused none of them (a marker is missing otherwise) but while a spec had
// removed a permission on purpose (Framework.ExpectRefusedDuring), the suite used the
// permissions in Used, and with EveryGrantUsed every permission the generated roles
// (manifests/rbac/role.yaml) grant, except those in MayStayUnused (an unused one is a marker too
// many). Uses are checked on whole runs only: a focused run leaves paths untaken.
type RBAC struct {
	// Used are permissions this suite exercises and others may not (test/integration leaves the
	// Harvester mode's to test/harvestermode, say).
	Used []RBACUse
	// EveryGrantUsed: every generated permission must have been used, but MayStayUnused's.
	EveryGrantUsed bool
	MayStayUnused  []RBACUse
}

// RBACUse is verbs on a resource ("settings", or "settings/status" for a subresource) of an API
// group ("" for the core group), in Namespace: the request's (Used) or the Role's (MayStayUnused);
// "" for any. Why says what uses it.
type RBACUse struct {
	Namespace, Group, Resource string
	Verbs                      []string
	Why                        string
}

// String names the resource as kubectl does: "hyperconvergeds.hco.kubevirt.io",
// "settings.migranet.io/status".
func (u RBACUse) String() string {
	resource, sub, _ := strings.Cut(u.Resource, "/")
	if u.Group != "" {
		resource += "." + u.Group
	}
	if sub != "" {
		resource += "/" + sub
	}
	return resource
}

// covers reports whether u names verb on resource of group in namespace.
func (u RBACUse) covers(namespace, group, resource, verb string) bool {
	return (u.Namespace == "" || u.Namespace == namespace) && u.Group == group && u.Resource == resource &&
		slices.Contains(u.Verbs, verb)
}

// usedBy reports whether the audited request used verb of u.
func (u RBACUse) usedBy(verb string) func(AuditEvent) bool {
	return func(e AuditEvent) bool {
		return e.ObjectRef != nil && e.Verb == verb && u.covers(e.ObjectRef.Namespace, e.ObjectRef.APIGroup, e.Resource(), verb)
	}
}

// check runs in AfterSuite.
func (r *RBAC) check(f *Framework) {
	events := f.expectNeverRefused(env.ManagerUser)
	if len(r.Used) == 0 && !r.EveryGrantUsed {
		return
	}
	if partialRun() {
		fmt.Fprintln(GinkgoWriter, "rbac: partial run, the use of permissions is checked on whole runs only")
		return
	}
	if len(r.Used) > 0 {
		By("migranet used the permissions this suite exercises")
		Expect(unusedUses(r.Used, events)).To(BeEmpty(), "remove the RBAC marker, or find why this suite did not use it")
	}
	if r.EveryGrantUsed {
		By("every generated permission was used by some request during the suite")
		grants, err := generatedGrants()
		Expect(err).NotTo(HaveOccurred())
		Expect(unusedGrants(grants, r.MayStayUnused, events)).To(BeEmpty(),
			"granted but never used by the manager: remove the marker, or add a spec that exercises it")
	}
}

// unusedUses says which verb of used no event used.
func unusedUses(used []RBACUse, events []AuditEvent) []string {
	var out []string
	for _, u := range used {
		for _, verb := range u.Verbs {
			if !slices.ContainsFunc(events, u.usedBy(verb)) {
				out = append(out, fmt.Sprintf("%s %s (%s)", verb, u, u.Why))
			}
		}
	}
	return out
}

// unusedGrants names the grants no event used, but those exempt covers.
func unusedGrants(grants []grant, exempt []RBACUse, events []AuditEvent) []string {
	var out []string
	for _, g := range grants {
		if !slices.ContainsFunc(exempt, g.exempt) && !slices.ContainsFunc(events, g.usedBy) {
			out = append(out, g.String())
		}
	}
	return out
}

// partialRun reports whether the run was focused or filtered: only some specs ran.
func partialRun() bool {
	cfg, _ := GinkgoConfiguration()
	return len(cfg.FocusStrings) > 0 || len(cfg.SkipStrings) > 0 || len(cfg.FocusFiles) > 0 ||
		len(cfg.SkipFiles) > 0 || cfg.LabelFilter != ""
}
