package webhook

import "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

// notJudged is the answer of a webhook whose failurePolicy is Ignore when it cannot judge a
// request (a cache that cannot be read, an object that does not decode): the API server would
// admit the request had the webhook not answered at all, so refusing it here would make an
// internal error stricter than an outage. It admits with a warning naming the cause and counts
// ResultError. Webhooks with failurePolicy Fail refuse instead (apierrors.NewInternalError).
func (m *Metrics) notJudged(webhook string, err error) admission.Warnings {
	m.count(webhook, RuleNone, ResultError)
	return admission.Warnings{"migranet could not judge this request and admitted it unchecked (its webhook fails open): " + err.Error()}
}
