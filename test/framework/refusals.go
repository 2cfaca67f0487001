package framework

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified
)

// refusals are the periods in which a spec removed one of migranet's permissions on purpose.
type refusals struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

// ExpectRefusedDuring says a spec removed a permission of migranet's between from and to: RBAC's
// refusals of its requests then (a second either side) are expected by the suite's RBAC check.
func (f *Framework) ExpectRefusedDuring(from, to time.Time) {
	f.refusals.mu.Lock()
	defer f.refusals.mu.Unlock()
	f.refusals.spans = append(f.refusals.spans, [2]time.Time{from.Add(-time.Second), to.Add(time.Second)})
}

func (f *Framework) refusable(t time.Time) bool {
	f.refusals.mu.Lock()
	defer f.refusals.mu.Unlock()
	for _, s := range f.refusals.spans {
		if !t.Before(s[0]) && !t.After(s[1]) {
			return true
		}
	}
	return false
}

// expectNeverRefused checks the audit log for requests of user that RBAC refused outside the
// periods of ExpectRefusedDuring, and returns user's audited requests. The environment's audit
// policy must log user's requests (env.AuditManagerRequests).
func (f *Framework) expectNeverRefused(user string) []AuditEvent {
	events, err := ReadAudit(f.AuditLog(), user)
	Expect(err).NotTo(HaveOccurred())
	Expect(events).NotTo(BeEmpty(), "no request by %s in the audit log", user)
	By("RBAC refused no request of " + user + ", except while a spec had removed a permission")
	var forbidden []string
	for _, e := range events {
		if e.ForbiddenByRBAC() && !f.refusable(e.StageTimestamp) {
			forbidden = append(forbidden, e.String())
		}
	}
	Expect(forbidden).To(BeEmpty(), "requests refused by RBAC: a marker is missing")
	return events
}
