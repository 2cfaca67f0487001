package framework

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified
)

// ExpectNeverForbidden checks the audit log for requests of user that RBAC refused, outside the
// periods expected says a spec removed a permission on purpose (nil: none), and returns user's
// audited requests. Call it from AfterSuite with an environment started with an audit policy that
// logs user's requests (env.AuditManagerRequests).
func (f *Framework) ExpectNeverForbidden(user string, expected func(time.Time) bool) []AuditEvent {
	events, err := ReadAudit(f.AuditLog(), user)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, events).NotTo(BeEmpty(), "no request by %s in the audit log", user)
	By("RBAC refused no request of " + user + ", except while a spec had removed a permission")
	var forbidden []string
	for _, e := range events {
		if e.ForbiddenByRBAC() && (expected == nil || !expected(e.StageTimestamp)) {
			forbidden = append(forbidden, e.String())
		}
	}
	ExpectWithOffset(1, forbidden).To(BeEmpty(), "requests refused by RBAC: a marker is missing")
	return events
}
