package poll

import (
	"errors"
	"testing"
	"time"
)

// TestUntil: true as soon as the condition holds, false at the deadline, the first error ends
// the wait. Faults caught: giving up before the deadline, never giving up, swallowing an error.
func TestUntil(t *testing.T) {
	n := 0
	if !Until(time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("a condition true on the third ask: asked %d times", n)
	}
	start := time.Now()
	if Until(100*time.Millisecond, func() bool { return false }) {
		t.Error("a condition never true held")
	}
	if e := time.Since(start); e < 100*time.Millisecond {
		t.Errorf("gave up after %s, before the 100ms deadline", e)
	}
	boom := errors.New("boom")
	asks := 0
	if ok, err := UntilErr(time.Second, func() (bool, error) { asks++; return false, boom }); ok || !errors.Is(err, boom) || asks != 1 {
		t.Errorf("an error: ok %v, err %v after %d asks", ok, err, asks)
	}
}
