package qemu

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// dumpChunk is the unit CompareMemory reads and reports differences in (a page).
const dumpChunk = 4096

// CompareMemory dumps the guest RAM of both (paused) VMs with QMP pmemsave, the
// physical range [0, size), and fails unless they are byte for byte equal,
// naming the first differing page and how many differ. The dumps go to
// /dev/shm when it is writable (they are 2 × size) and are removed after.
func CompareMemory(src, dst *QMP, size int64) error {
	dir, err := os.MkdirTemp(dumpRoot(), "vpmem")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	paths := [2]string{filepath.Join(dir, "src.mem"), filepath.Join(dir, "dst.mem")}
	for i, q := range []*QMP{src, dst} {
		if err := q.Do("pmemsave", map[string]any{"val": 0, "size": size, "filename": paths[i]}, nil); err != nil {
			return fmt.Errorf("dumping guest memory: %w", err)
		}
	}
	return compareFiles(paths[0], paths[1], size)
}

func dumpRoot() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "vpprobe"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

func compareFiles(a, b string, size int64) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	var off int64
	first, pages := int64(-1), 0
	for off < size {
		if _, err := io.ReadFull(fa, ba); err != nil {
			return fmt.Errorf("source dump at %#x: %w", off, err)
		}
		if _, err := io.ReadFull(fb, bb); err != nil {
			return fmt.Errorf("destination dump at %#x: %w", off, err)
		}
		if !bytes.Equal(ba, bb) {
			for p := 0; p < len(ba); p += dumpChunk {
				if !bytes.Equal(ba[p:p+dumpChunk], bb[p:p+dumpChunk]) {
					if first < 0 {
						first = off + int64(p)
					}
					pages++
				}
			}
		}
		off += int64(len(ba))
	}
	if pages > 0 {
		return fmt.Errorf("guest memory differs after the migration: %d pages of %d, first at %#x", pages, size/dumpChunk, first)
	}
	return nil
}
