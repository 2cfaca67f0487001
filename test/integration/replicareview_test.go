package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/env"
)

// vmimWebhookPath is where every replica serves the VMIM validating webhook.
const vmimWebhookPath = "/validate-kubevirt-io-v1-virtualmachineinstancemigration"

// replicaRefusal sends vmim's create, as a dry run, straight to replica r's VMIM webhook, as the
// API server would send it, and returns the refusal's message ("" when r admits it). Through the
// Service the API server keeps its connection to one replica, so only a request to each replica
// tells what each one's caches hold.
func replicaRefusal(ctx context.Context, c client.Client, r *env.Manager, vmim *kubevirtv1.VirtualMachineInstanceMigration) (string, error) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, cfg); err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	for _, w := range cfg.Webhooks {
		pool.AppendCertsFromPEM(w.ClientConfig.CABundle)
	}
	obj := vmim.DeepCopy()
	obj.APIVersion, obj.Kind = kubevirtv1.GroupVersion.String(), "VirtualMachineInstanceMigration"
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	dry := true
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(fmt.Sprintf("direct-%d", time.Now().UnixNano())),
			Kind:      metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"},
			Resource:  metav1.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"},
			Name:      obj.Name,
			Namespace: obj.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
			DryRun:    &dry,
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.WebhookURL()+vmimWebhookPath, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var answer admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return "", fmt.Errorf("replica %s answered %s: %w", r.Name, resp.Status, err)
	}
	if answer.Response == nil {
		return "", fmt.Errorf("replica %s answered %s without a response", r.Name, resp.Status)
	}
	if answer.Response.Allowed {
		return "", nil
	}
	if answer.Response.Result == nil {
		return "refused without a message", nil
	}
	return answer.Response.Result.Message, nil
}
