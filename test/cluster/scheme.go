package cluster

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/migranet/migranet/settings"
)

// Scheme is migranet's own scheme (settings.NewScheme) plus the CRD kind the local cluster
// installs.
func Scheme() *runtime.Scheme {
	s, err := settings.NewScheme()
	if err == nil {
		err = apiextensionsv1.AddToScheme(s)
	}
	if err != nil {
		// The scheme builders only fail on a programming error (a kind registered twice).
		panic(err)
	}
	return s
}
