package nodeagent

import (
	"errors"
	"testing"
)

func TestWireRoundTrip(t *testing.T) {
	id := IDOf("kubevirt/vm-migration-network-0123456789")
	b := make([]byte, 100)
	header{kind: kindProbe, net: id, seq: 1<<40 + 7, size: 100}.encode(b)
	got, err := decode(b, id)
	if err != nil || got.kind != kindProbe || got.seq != 1<<40+7 || got.size != 100 {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	other := IDOf("kubevirt/vm-migration-network-ffffffffff")
	if other == id {
		t.Fatal("two networks share an identity")
	}
	bad := func(mut func([]byte)) []byte { c := append([]byte(nil), b...); mut(c); return c }
	for _, tt := range []struct {
		name string
		pkt  []byte
		want error
	}{
		{"short", b[:headerLen-1], errShort},
		{"foreign magic", bad(func(c []byte) { c[0] = 'X' }), errMagic},
		{"newer version", bad(func(c []byte) { c[4] = 9 }), errVersion},
		{"unknown kind", bad(func(c []byte) { c[5] = 3 }), errKind},
		{"another network", bad(func(c []byte) { copy(c[8:16], other[:]) }), errNetwork},
	} {
		if _, err := decode(tt.pkt, id); !errors.Is(err, tt.want) {
			t.Errorf("%s: decode error %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestUDPPayloadFillsTheFrame(t *testing.T) {
	if udpPayload(true, 1500) != 1472 || udpPayload(false, 1500) != 1452 || udpPayload(true, 9000) != 8972 {
		t.Errorf("payloads: %d %d %d", udpPayload(true, 1500), udpPayload(false, 1500), udpPayload(true, 9000))
	}
}
