package statuswrite

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/migranet/migranet/settings/v1beta1"
)

// TestRecordWriteFailure: a failed write is one Warning event naming the writer and the API
// server's answer, cut at 1 KiB; a write that succeeded records nothing. Catches: a refused
// status write that is only logged.
func TestRecordWriteFailure(t *testing.T) {
	rec := record.NewFakeRecorder(3)
	s := &v1beta1.Setting{}
	RecordWriteFailure(rec, s, FieldManagerNetwork, nil)
	RecordWriteFailure(rec, s, FieldManagerNetwork, errors.New(`Setting.migranet.io "vm-migration-network" is invalid: status.capacity.usable: Invalid value`))
	RecordWriteFailure(rec, s, FieldManagerSettings, errors.New(strings.Repeat("x", 5000)))
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 2 {
		t.Fatalf("events = %q, want two", got)
	}
	if want := "Warning StatusWriteFailed migranet-netcontroller could not write this setting's status"; !strings.HasPrefix(got[0], want) ||
		!strings.Contains(got[0], "status.capacity.usable: Invalid value") {
		t.Errorf("event = %q, want it to start %q and carry the API server's answer", got[0], want)
	}
	if n := len([]rune(strings.TrimPrefix(got[1], "Warning StatusWriteFailed "))); n != 1024 {
		t.Errorf("long message is %d runes, want 1024", n)
	}
}
