package webhook

import (
	"strings"
	"testing"

	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

func TestValidateNADDelete(t *testing.T) {
	for _, tc := range []struct {
		name, active string
		refused      bool
	}{
		{checktest.NAD, checktest.NAD, true},
		{checktest.NAD, "", false},
		{checktest.NAD, "vm-migration-network-ffffffffff", false},
		{"", "", false},
	} {
		err := ValidateNADDelete(tc.name, tc.active)
		if (err != nil) != tc.refused {
			t.Errorf("ValidateNADDelete(%q, %q) = %v, want refused=%v", tc.name, tc.active, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "change or clear the setting vm-migration-network") {
			t.Errorf("message %q does not say what to do", err)
		}
	}
}
