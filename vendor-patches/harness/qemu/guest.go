package qemu

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// guestSource is a 32-bit multiboot kernel that writes a counter into every page
// of 16–20 MiB forever, so pre-copy always finds dirty pages.
const guestSource = `	.code32
	.section .text
	.globl _start
	.align 4
	.long 0x1BADB002
	.long 0
	.long -0x1BADB002
_start:
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

// MemSize is the guest RAM.
const MemSize = 256 << 20

// Assets are the guest kernel and the random RAM image of one test run.
type Assets struct {
	Kernel string
	RAM    string
}

// Build assembles the guest with as/ld and writes the random RAM image into dir.
func Build(dir string) (*Assets, error) {
	src := filepath.Join(dir, "guest.S")
	obj := filepath.Join(dir, "guest.o")
	elf := filepath.Join(dir, "guest.elf")
	if err := os.WriteFile(src, []byte(guestSource), 0o644); err != nil {
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
	if _, err := io.CopyN(f, rand.Reader, MemSize); err != nil {
		return nil, err
	}
	return &Assets{Kernel: elf, RAM: ram}, nil
}
