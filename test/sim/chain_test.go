package sim

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWithoutVLAN: the tag comes off the plugin that carries it, the bridge, alone or first of a
// list, and every other plugin stays as it was. Catches: a list's top level edited (the tag stays
// and the kernel refuses the ADD again), the chain's other plugins lost.
func TestWithoutVLAN(t *testing.T) {
	cases := []struct{ name, config, want string }{
		{"one plugin", `{"type":"bridge","bridge":"mig-br","vlan":100,"mtu":1400}`, `{"type":"bridge","bridge":"mig-br","mtu":1400}`},
		{"a list", `{"cniVersion":"1.0.0","plugins":[{"type":"bridge","vlan":100},{"type":"tuning","mtu":1300}]}`,
			`{"cniVersion":"1.0.0","plugins":[{"type":"bridge"},{"type":"tuning","mtu":1300}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := withoutVLAN(c.config)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal([]byte(got), &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(c.want), &w); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
