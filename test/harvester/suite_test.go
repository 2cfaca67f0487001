package harvester

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/dynamic"

	"github.com/migranet/migranet/test/framework"
)

var (
	// f is a bare control plane with Harvester's CRDs.
	f   *framework.Framework
	dyn dynamic.Interface
)

func TestHarvester(t *testing.T) {
	framework.RunSuite(t, "migranet Harvester fixtures", &f, framework.Suite{
		ControlPlane: &framework.ControlPlane{CRDDirs: []string{"test/harvester/crds"}},
		Started: func(_ context.Context, f *framework.Framework) {
			var err error
			dyn, err = dynamic.NewForConfig(f.Config)
			Expect(err).NotTo(HaveOccurred())
		},
	})
}
