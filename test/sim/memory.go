package sim

import (
	"bytes"
	"math/rand/v2"
)

// guestPage is the content a stream's memory carries, repeated: its byte at stream offset o is
// guestPage[o % len]. Random bytes, so a byte changed on the way (a proxy's fault) shows wherever it
// lands, as the harness's guest-memory comparison shows it for a real QEMU.
var guestPage = func() []byte {
	b := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(0x6d6967, 0x72616e6574))
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}()

// memoryAt is up to n bytes of the memory at stream offset off (fewer where the page wraps).
func memoryAt(off, n int64) []byte {
	start := off % int64(len(guestPage))
	return guestPage[start:min(int64(len(guestPage)), start+n)]
}

// firstDifference is the stream offset of the first byte of got (which arrived at offset off) that
// is not the memory there, or -1.
func firstDifference(off int64, got []byte) int64 {
	for done := int64(0); done < int64(len(got)); {
		want := memoryAt(off+done, int64(len(got))-done)
		part := got[done : done+int64(len(want))]
		if !bytes.Equal(part, want) {
			for i := range part {
				if part[i] != want[i] {
					return off + done + int64(i)
				}
			}
		}
		done += int64(len(want))
	}
	return -1
}
