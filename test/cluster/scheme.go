package cluster

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/migranet/migranet/settings/clusterread"
)

// Scheme is migranet's own scheme (clusterread.NewScheme) plus the CRD kind the local cluster
// installs.
func Scheme() *runtime.Scheme {
	s, err := clusterread.NewScheme()
	if err == nil {
		err = apiextensionsv1.AddToScheme(s)
	}
	if err != nil {
		// The scheme builders only fail on a programming error (a kind registered twice).
		panic(err)
	}
	return s
}
