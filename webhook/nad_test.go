package webhook

import (
	"strings"
	"testing"

	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

func TestValidateNADDelete(t *testing.T) {
	const hc = "hyperconvergeds.hco.kubevirt.io/kubevirt/kubevirt-hyperconverged"
	for _, tc := range []struct {
		name, active, decider string
		refused               bool
		fix                   string
	}{
		{name: checktest.NAD, active: checktest.NAD, refused: true, fix: "change or clear the setting vm-migration-network"},
		{name: "their-mig", active: "their-mig", decider: hc, refused: true, fix: "change the migration network on " + hc},
		{name: checktest.NAD, active: ""},
		{name: checktest.NAD, active: "vm-migration-network-ffffffffff"},
		// The near miss: a NAD whose name the active one starts with.
		{name: "their-mig", active: "their-mig-2", decider: hc},
		{name: "", active: ""},
	} {
		err := ValidateNADDelete(tc.name, tc.active, tc.decider)
		if (err != nil) != tc.refused {
			t.Errorf("ValidateNADDelete(%q, %q) = %v, want refused=%v", tc.name, tc.active, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), tc.fix) {
			t.Errorf("message %q does not say what to do (%q)", err, tc.fix)
		}
	}
}
