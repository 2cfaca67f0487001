package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// maxResponse bounds an admission answer whatever the request: 21 causes of at most a few
// kilobytes each, written twice (message and causes).
const maxResponse = 128 << 10

// fuzzReader is a cache holding one ready KubeVirt CR, a VMI and the two settings.
type fuzzReader struct{ setting *v1beta1.Setting }

func (r fuzzReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *kubevirtv1.VirtualMachineInstance:
		*o = *vmi("node-0", nil)
		o.Name, o.Namespace = key.Name, key.Namespace
		return nil
	case *v1beta1.Setting:
		if key.Name == v1beta1.MigrationNetwork {
			*o = *r.setting
			return nil
		}
	}
	return apierrors.NewNotFound(kubevirtv1.Resource("object"), key.Name)
}

func (r fuzzReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *kubevirtv1.VirtualMachineInstanceMigrationList:
		l.Items = []kubevirtv1.VirtualMachineInstanceMigration{{ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: testNS}}}
	case *kubevirtv1.KubeVirtList:
		l.Items = []kubevirtv1.KubeVirt{*readyKubeVirt()}
	case *corev1.NodeList:
		l.Items = []corev1.Node{*node("node-0"), *node("node-1")}
	case *corev1.PodList:
		l.Items = nil
	default:
		return fmt.Errorf("fuzzReader cannot list %T", list)
	}
	return nil
}

// fuzzHooks serves every migranet webhook the way the manager does (decoding included), with
// panics not recovered so that the fuzzer sees them.
func fuzzHooks(t testing.TB) map[string]http.Handler {
	scheme, err := clusterread.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	r := fuzzReader{setting: &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork, ResourceVersion: "1"},
		Value: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}`}}
	st := &migrationcheck.APIState{Reader: r, KubeVirtNamespace: "kubevirt"}
	hooks := map[string]struct {
		obj runtime.Object
		v   admission.CustomValidator
	}{
		"setting":  {&v1beta1.Setting{}, &SettingValidator{Reader: r, State: st}},
		"vmim":     {&kubevirtv1.VirtualMachineInstanceMigration{}, &MigrationValidator{State: st}},
		"nad":      {&nadv1.NetworkAttachmentDefinition{}, &NADValidator{Reader: r, KubeVirtNamespace: "kubevirt"}},
		"kubevirt": {&kubevirtv1.KubeVirt{}, &KubeVirtValidator{Reader: r}},
	}
	out := map[string]http.Handler{}
	for name, h := range hooks {
		out[name] = admission.WithCustomValidator(scheme, h.obj, h.v).WithRecoverPanic(false)
	}
	return out
}

var review = checktest.Review

var (
	settingGVK = metav1.GroupVersionKind{Group: "migranet.io", Version: "v1beta1", Kind: "Setting"}
	vmimGVK    = checktest.VMIMKind
)

// requests builds, from the fuzzer's strings, a review for every operation each webhook judges.
func requests(name, value string) map[string][][]byte {
	s := &v1beta1.Setting{TypeMeta: metav1.TypeMeta{APIVersion: "migranet.io/v1beta1", Kind: "Setting"},
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}, Value: value, Default: name}
	named := s.DeepCopy()
	named.Name = name
	policy := s.DeepCopy()
	policy.Name, policy.Default = v1beta1.MigrationPolicy, ""
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: vmimGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Annotations: map[string]string{settings.ForceCancelAnnotation: value}},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: value, AddedNodeSelector: map[string]string{name: value, "k": name}}}
	return map[string][][]byte{
		"setting": {
			review(admissionv1.Create, settingGVK, s.Name, s, nil),
			review(admissionv1.Create, settingGVK, policy.Name, policy, nil),
			review(admissionv1.Update, settingGVK, s.Name, s, &v1beta1.Setting{ObjectMeta: s.ObjectMeta}),
			review(admissionv1.Create, settingGVK, name, named, nil),
			review(admissionv1.Delete, settingGVK, s.Name, nil, s),
		},
		"vmim": {
			review(admissionv1.Create, vmimGVK, name, vmim, nil),
			review(admissionv1.Delete, vmimGVK, name, nil, vmim),
		},
	}
}

// serve runs one review through h and checks the answer: HTTP 200, an AdmissionReview with a
// response, and at most maxResponse bytes.
func serve(t *testing.T, hook string, h http.Handler, body []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	out := rec.Body.Bytes()
	if len(out) > maxResponse {
		t.Fatalf("%s: %d-byte answer to a %d-byte request (at most %d): %.300s", hook, len(out), len(body), maxResponse, out)
	}
	var rv admissionv1.AdmissionReview
	if rec.Code != http.StatusOK || json.Unmarshal(out, &rv) != nil || rv.Response == nil {
		t.Fatalf("%s: HTTP %d, not an AdmissionReview with a response: %.300s", hook, rec.Code, out)
	}
}

// FuzzAdmission drives the whole admission path, decode → validate → respond, of every migranet
// webhook: raw request bodies, and reviews built around fuzzed names and values. The seeds hold
// the hostile values, built here rather than committed: a 5 MB cluster network and
// 200,000 overlapping excludes.
func FuzzAdmission(f *testing.F) {
	big := strings.Repeat("a", 5<<20)
	excl := make([]string, 200000)
	for i := range excl {
		excl[i] = `"192.168.100.0/30"`
	}
	seeds := []struct{ name, value string }{
		{v1beta1.MigrationNetwork, `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`},
		{v1beta1.MigrationNetwork, `{"clusterNetwork":"` + big + `","vlan":1,"range":"10.0.0.0/8"}`},
		{v1beta1.MigrationNetwork, `{"clusterNetwork":"m","vlan":1,"range":"192.168.100.0/24","exclude":[` + strings.Join(excl, ",") + `]}`},
		{big[:300000], `{"range":"0.0.0.0/0"}`},
		{"x", `{"rules":{"feasibleTarget":"warn"},"exemptUsers":["a","a"]}`},
		{"", ""},
	}
	for _, s := range seeds {
		f.Add([]byte(nil), s.name, s.value)
	}
	f.Add(review(admissionv1.Create, settingGVK, "x", map[string]any{"apiVersion": "migranet.io/v1beta1", "kind": "Setting",
		"metadata": map[string]any{"name": v1beta1.MigrationNetwork}, "value": map[string]any{"clusterNetwork": big}}, nil), "", "")
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"kind":`), "", "")
	f.Add([]byte(`not json`), "", "")
	hooks := fuzzHooks(f)
	f.Fuzz(func(t *testing.T, raw []byte, name, value string) {
		if len(raw) > 0 {
			for hook, h := range hooks {
				serve(t, hook, h, raw)
			}
		}
		for hook, bodies := range requests(name, value) {
			for _, b := range bodies {
				serve(t, hook, hooks[hook], b)
			}
		}
	})
}
