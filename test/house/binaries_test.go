package house

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFile is the largest file the tree may hold.
const maxFile = 1 << 20

// problem says what is wrong with one tracked file, or "".
func problem(name string, size int64, head []byte) string {
	switch {
	case size > maxFile:
		return fmt.Sprintf("%s is %d bytes, over 1 MiB: keep large artefacts out of git (build or fetch them)", name, size)
	case bytes.HasPrefix(head, []byte("\x7fELF")) || bytes.HasPrefix(head, []byte("MZ")) || bytes.IndexByte(head, 0) >= 0:
		return name + " is a binary: build it instead of committing it (add it to .gitignore)"
	}
	return ""
}

// TestNoBinariesInGit: the fault it catches is a committed build output (a Go binary was once
// committed at the root) or an oversized file.
func TestNoBinariesInGit(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v (the check reads what git tracks)", err)
	}
	top := strings.TrimSpace(string(root))
	out, err := exec.Command("git", "-C", top, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 50 {
		t.Fatalf("git tracks %d files: not the migranet tree?", len(files))
	}
	for _, name := range files {
		path := filepath.Join(top, name)
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 8000)
		n, _ := f.Read(head)
		_ = f.Close()
		if p := problem(name, st.Size(), head[:n]); p != "" {
			t.Error(p)
		}
	}
}

func TestProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int64
		head string
		bad  bool
	}{
		{"a Go binary", 4 << 20, "\x7fELF\x02\x01", true},
		{"a small ELF", 900, "\x7fELF\x02\x01", true},
		{"NUL bytes", 10, "ab\x00cd", true},
		{"a large text", 2 << 20, "package x", true},
		{"source", 4000, "package x\n", false},
		{"UTF-8 text", 30, "€ and ü", false},
	} {
		if got := problem(tc.name, tc.size, []byte(tc.head)) != ""; got != tc.bad {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.bad)
		}
	}
}
