package qemu

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// multibootHeader starts both guests: 32-bit code whose first words are the multiboot header
// (magic, no flags, checksum) QEMU's -kernel looks for.
const multibootHeader = `	.code32
	.section .text
	.globl _start
	.align 4
	.long 0x1BADB002
	.long 0
	.long -0x1BADB002
`

// guestSource is a 32-bit multiboot kernel that writes a counter into every page
// of 16–20 MiB forever, so pre-copy always finds dirty pages.
const guestSource = multibootHeader + `_start:
	cli
	xorl %eax, %eax
1:	movl $0x1000000, %edi
2:	movl %eax, (%edi)
	addl $4096, %edi
	cmpl $0x1400000, %edi
	jb 2b
	incl %eax
	jmp 1b
`

// pacedSource is a 32-bit multiboot kernel that dirties memory at a steady
// rate: it programs the PIT (channel 0, rate generator, 1.193182 MHz) and, each
// time TICKS of it have passed, writes the pass number into the next PAGES pages
// of [START, END), wrapping round. A backlog of more than 8 bursts (the guest
// was descheduled) is dropped rather than caught up.
const pacedSource = multibootHeader + `_start:
	cli
	movl $0x90000, %esp
	movb $0x34, %al
	outb %al, $0x43
	xorb %al, %al
	outb %al, $0x40
	outb %al, $0x40
	call pit
	movl %eax, %ebx
	xorl %esi, %esi
	movl $START, %edi
	xorl %ebp, %ebp
wait:
	call pit
	movl %ebx, %ecx
	subl %eax, %ecx
	andl $0xffff, %ecx
	movl %eax, %ebx
	addl %ecx, %esi
	cmpl $TICKS, %esi
	jb wait
	subl $TICKS, %esi
	cmpl $(8*TICKS), %esi
	jb 0f
	xorl %esi, %esi
0:	movl $PAGES, %ecx
burst:
	movl %ebp, (%edi)
	addl $4096, %edi
	cmpl $END, %edi
	jb 1f
	movl $START, %edi
	incl %ebp
1:	loop burst
	jmp wait
pit:
	xorb %al, %al
	outb %al, $0x43
	inb $0x40, %al
	movb %al, %dl
	inb $0x40, %al
	movb %al, %dh
	movzwl %dx, %eax
	ret
`

// MemSize is the guest RAM of the test suite's guest (Build).
const MemSize = 256 << 20

// Assets are the guest kernel and the random RAM image of one test run.
type Assets struct {
	Kernel string
	RAM    string
	// MemBytes is the guest RAM (the size of the RAM image).
	MemBytes int64
}

// Paced describes a guest that dirties memory at a steady rate (BuildPaced).
type Paced struct {
	MemBytes   int64 // guest RAM, a multiple of 1 MiB
	DirtyStart int64 // first byte of the dirtied window
	DirtyBytes int64 // size of the window, written round-robin
	DirtyMiBps int   // MiB dirtied per second, in bursts every 10 ms
}

// pitHz is the PIT's input clock.
const pitHz = 1193182

// BuildPaced assembles a guest that dirties p.DirtyMiBps MiB/s of
// [p.DirtyStart, p.DirtyStart+p.DirtyBytes) and writes a random RAM image of
// p.MemBytes into dir.
func BuildPaced(dir string, p Paced) (*Assets, error) {
	if p.DirtyStart < 1<<20 || p.DirtyStart+p.DirtyBytes > p.MemBytes || p.DirtyMiBps <= 0 || p.MemBytes%(1<<20) != 0 {
		return nil, fmt.Errorf("paced guest: bad layout %+v", p)
	}
	// Bursts every 10 ms: pages per burst = MiB/s × 256 pages/MiB / 100.
	pages := (p.DirtyMiBps*256 + 50) / 100
	if pages == 0 {
		pages = 1
	}
	src := strings.NewReplacer("START", fmt.Sprint(p.DirtyStart), "END", fmt.Sprint(p.DirtyStart+p.DirtyBytes),
		"TICKS", fmt.Sprint(pitHz/100), "PAGES", fmt.Sprint(pages)).Replace(pacedSource)
	return build(dir, src, p.MemBytes)
}

// Build assembles the test suite's guest (MemSize of RAM, 16–20 MiB rewritten
// as fast as it runs) with as/ld and writes the random RAM image into dir.
func Build(dir string) (*Assets, error) {
	return build(dir, guestSource, MemSize)
}

func build(dir, source string, memBytes int64) (*Assets, error) {
	src := filepath.Join(dir, "guest.S")
	obj := filepath.Join(dir, "guest.o")
	elf := filepath.Join(dir, "guest.elf")
	if err := os.WriteFile(src, []byte(source), 0o644); err != nil {
		return nil, err
	}
	for _, argv := range [][]string{
		{"as", "--32", "-o", obj, src},
		{"ld", "-m", "elf_i386", "-Ttext", "0x100000", "-e", "_start", "-o", elf, obj},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s (binutils): %v: %s", argv[0], err, out)
		}
	}
	ram := filepath.Join(dir, "ram.bin")
	f, err := os.Create(ram)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, memBytes); err != nil {
		return nil, err
	}
	return &Assets{Kernel: elf, RAM: ram, MemBytes: memBytes}, nil
}
