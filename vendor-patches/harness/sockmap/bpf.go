package sockmap

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// insn is one eBPF instruction as the kernel reads it.
type insn struct {
	code uint8
	regs uint8 // destination register in the low nibble, source in the high one
	off  int16
	imm  int32
}

// Opcode parts and helper numbers used by the verdict program (uapi/linux/bpf.h,
// bpf_common.h).
const (
	clsLD, clsLDX, clsST, clsSTX, clsJMP, clsALU64 = 0x00, 0x01, 0x02, 0x03, 0x05, 0x07
	sizeW, sizeDW                                  = 0x00, 0x18
	modeIMM, modeMEM, modeATOMIC                   = 0x00, 0x60, 0xc0
	srcK, srcX                                     = 0x00, 0x08
	opADD, opMOV, opJEQ, opCALL, opEXIT            = 0x00, 0xb0, 0x10, 0x80, 0x90
	pseudoMapFD                                    = 1
	helperMapLookupElem                            = 1
	helperSkRedirectMap                            = 52
	// FlagIngress (BPF_F_INGRESS) queues a redirected chunk for the target
	// socket's own reader instead of sending it on that socket.
	FlagIngress = 1
)

func op(code uint8, dst, src uint8, off int16, imm int32) insn {
	return insn{code: code, regs: dst | src<<4, off: off, imm: imm}
}

// loadMap is the two-slot instruction that puts map fd's address in dst.
func loadMap(dst uint8, fd int) []insn {
	return []insn{op(clsLD|sizeDW|modeIMM, dst, pseudoMapFD, 0, int32(fd)), {}}
}

// verdictProgram counts each chunk's length (skb->len, offset 0 of
// struct __sk_buff) into slot key of the array map counters, then redirects
// the chunk to slot 0 of the sockmap target with flags, returning the helper's
// verdict (SK_PASS when redirected, SK_DROP when the slot is empty).
func verdictProgram(counters int, key int32, target int, flags int32) []insn {
	p := []insn{
		op(clsALU64|opMOV|srcX, 6, 1, 0, 0),  // r6 = ctx
		op(clsLDX|modeMEM|sizeW, 7, 6, 0, 0), // r7 = skb->len
		op(clsST|modeMEM|sizeW, 10, 0, -4, key),
	}
	p = append(p, loadMap(1, counters)...)
	p = append(p,
		op(clsALU64|opMOV|srcX, 2, 10, 0, 0),
		op(clsALU64|opADD|srcK, 2, 0, 0, -4), // r2 = &key on the stack
		op(clsJMP|opCALL, 0, 0, 0, helperMapLookupElem),
		op(clsJMP|opJEQ|srcK, 0, 0, 1, 0), // no slot: skip the add
		op(clsSTX|modeATOMIC|sizeDW, 0, 7, 0, opADD),
		op(clsALU64|opMOV|srcX, 1, 6, 0, 0),
	)
	p = append(p, loadMap(2, target)...)
	return append(p,
		op(clsALU64|opMOV|srcK, 3, 0, 0, 0),
		op(clsALU64|opMOV|srcK, 4, 0, 0, flags),
		op(clsJMP|opCALL, 0, 0, 0, helperSkRedirectMap),
		op(clsJMP|opEXIT, 0, 0, 0, 0),
	)
}

// sys is one bpf(2) call with attr zero-padded to size bytes.
func sys(cmd int, attr []byte) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(unsafe.Pointer(&attr[0])), uintptr(len(attr)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// attr lays out the given 32- and 64-bit words as a bpf_attr prefix.
func attr(size int, words ...any) []byte {
	b := make([]byte, size)
	off := 0
	for _, w := range words {
		switch v := w.(type) {
		case uint32:
			*(*uint32)(unsafe.Pointer(&b[off])) = v
			off += 4
		case uint64:
			off = (off + 7) &^ 7
			*(*uint64)(unsafe.Pointer(&b[off])) = v
			off += 8
		}
	}
	return b
}

func ptr[T any](p *T) uint64 { return uint64(uintptr(unsafe.Pointer(p))) }

func createMap(kind, valueSize, entries uint32) (int, error) {
	fd, err := sys(unix.BPF_MAP_CREATE, attr(72, uint32(kind), uint32(4), valueSize, entries))
	if err != nil {
		return -1, fmt.Errorf("bpf map (type %d): %w", kind, err)
	}
	return fd, nil
}

func updateMap(m int, key uint32, value *uint32) error {
	_, err := sys(unix.BPF_MAP_UPDATE_ELEM, attr(32, uint32(m), uint32(0), ptr(&key), ptr(value), uint64(0)))
	return err
}

func lookupMap(m int, key uint32) (uint64, error) {
	var v uint64
	_, err := sys(unix.BPF_MAP_LOOKUP_ELEM, attr(32, uint32(m), uint32(0), ptr(&key), ptr(&v), uint64(0)))
	return v, err
}

func loadVerdict(p []insn) (int, error) {
	license := []byte("GPL\x00")
	log := make([]byte, 1<<16)
	fd, err := sys(unix.BPF_PROG_LOAD, attr(144, uint32(unix.BPF_PROG_TYPE_SK_SKB), uint32(len(p)),
		ptr(&p[0]), ptr(&license[0]), uint32(1), uint32(len(log)), ptr(&log[0])))
	if err != nil {
		n := 0
		for n < len(log) && log[n] != 0 {
			n++
		}
		return -1, fmt.Errorf("stream verdict program refused: %w (verifier: %q)", err, log[:n])
	}
	return fd, nil
}

func attachVerdict(prog, m int) error {
	_, err := sys(unix.BPF_PROG_ATTACH, attr(32, uint32(m), uint32(prog), uint32(unix.BPF_SK_SKB_STREAM_VERDICT)))
	if err != nil {
		return fmt.Errorf("attach stream verdict to sockmap: %w", err)
	}
	return nil
}

// Relay joins two connected stream sockets in the kernel: a chunk arriving on
// A is counted in counter 0 and redirected to B, one arriving on B is counted
// in counter 1 and redirected to A, both with the same flags.
type Relay struct {
	counters, mapA, mapB, progA, progB int
}

// NewRelay loads the relay for the socket fds a and b. It needs CAP_BPF and
// CAP_NET_ADMIN (root) and a kernel with CONFIG_BPF_SYSCALL and
// CONFIG_NET_SOCK_MSG.
func NewRelay(a, b int, flags int32) (*Relay, error) {
	r := &Relay{counters: -1, mapA: -1, mapB: -1, progA: -1, progB: -1}
	fail := func(err error) (*Relay, error) {
		r.Close()
		return nil, fmt.Errorf("sockmap relay: %w (needs root: CAP_BPF, CAP_NET_ADMIN)", err)
	}
	var err error
	if r.counters, err = createMap(unix.BPF_MAP_TYPE_ARRAY, 8, 2); err != nil {
		return fail(err)
	}
	if r.mapA, err = createMap(unix.BPF_MAP_TYPE_SOCKMAP, 4, 1); err != nil {
		return fail(err)
	}
	if r.mapB, err = createMap(unix.BPF_MAP_TYPE_SOCKMAP, 4, 1); err != nil {
		return fail(err)
	}
	if r.progA, err = loadVerdict(verdictProgram(r.counters, 0, r.mapB, flags)); err != nil {
		return fail(err)
	}
	if r.progB, err = loadVerdict(verdictProgram(r.counters, 1, r.mapA, flags)); err != nil {
		return fail(err)
	}
	if err = attachVerdict(r.progA, r.mapA); err != nil {
		return fail(err)
	}
	if err = attachVerdict(r.progB, r.mapB); err != nil {
		return fail(err)
	}
	fdA, fdB := uint32(a), uint32(b)
	if err = updateMap(r.mapA, 0, &fdA); err != nil {
		return fail(fmt.Errorf("socket A into its sockmap: %w", err))
	}
	if err = updateMap(r.mapB, 0, &fdB); err != nil {
		return fail(fmt.Errorf("socket B into its sockmap: %w", err))
	}
	return r, nil
}

// Counted is how many bytes the verdict program has redirected from A to B
// (aToB) and from B to A.
func (r *Relay) Counted() (aToB, bToA uint64, err error) {
	if aToB, err = lookupMap(r.counters, 0); err != nil {
		return 0, 0, err
	}
	bToA, err = lookupMap(r.counters, 1)
	return aToB, bToA, err
}

// Close releases the programs and maps; the sockets leave the maps with them.
func (r *Relay) Close() {
	for _, fd := range []int{r.progA, r.progB, r.mapA, r.mapB, r.counters} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}
