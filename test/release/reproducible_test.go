package release

import (
	"bytes"
	"crypto/elliptic"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

var (
	signedOnce sync.Once
	signed     cut
	signedPub  []byte // the public key of the throwaway key that signed it
)

// theSignedRelease is a second cut of HEAD, signed with a key generated for it and thrown away
// (the private key is deleted once the cut is done), and that key's public half.
func theSignedRelease(t *testing.T) (string, []byte) {
	t.Helper()
	signedOnce.Do(func() {
		keys, err := os.MkdirTemp("", "migranet-release-key-")
		if err != nil {
			signed.err = err
			return
		}
		defer os.RemoveAll(keys)
		priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
		if err != nil {
			signed.err = err
			return
		}
		key := filepath.Join(keys, "release.key")
		if err := os.WriteFile(key, priv, 0o600); err != nil {
			signed.err = err
			return
		}
		dist, err := os.MkdirTemp("", "migranet-release-signed-")
		if err != nil {
			signed.err = err
			return
		}
		signed, signedPub = makeRelease(dist, testVersion, "SIGNING_KEY="+key), pub
	})
	if signed.err != nil {
		t.Fatalf("make release VERSION=%s SIGNING_KEY=...: %v\n%s", testVersion, signed.err, signed.output)
	}
	return signed.dir, signedPub
}

// folderFiles lists a release folder's files by name.
func folderFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// isSignature reports whether a release file is one that signing writes, or UNSIGNED.
func isSignature(name string) bool {
	return name == sumsSignature || name == imageSignature || name == unsignedFile
}

// TestSameCommitSameBytes: the fault it catches is a release that cannot be rebuilt and checked:
// a timestamp from the clock instead of the commit's (in a tar, a zip, a gzip header, an SBOM), a
// file order from the file system, a path of the build machine in a binary, a random serial
// number, a temporary name in a file, or signing that changes a signed file. Two cuts of the same
// commit, the second signed, must give the same bytes in every file but the signatures.
func TestSameCommitSameBytes(t *testing.T) {
	firstDir := theRelease(t)
	secondDir, _ := theSignedRelease(t)
	first, second := folderFiles(t, firstDir), folderFiles(t, secondDir)
	first = slices.DeleteFunc(first, isSignature)
	second = slices.DeleteFunc(second, isSignature)
	if !slices.Equal(first, second) {
		t.Fatalf("two cuts of one commit hold different files:\n%q\n%q", first, second)
	}
	for _, name := range first {
		a, err := os.ReadFile(filepath.Join(firstDir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(secondDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("two cuts of one commit differ in %s", name)
		}
	}
}

// TestUnsignedCutSaysSo: a cut without SIGNING_KEY says UNSIGNED in its output and in a file of
// its folder, and holds no signature; a signed cut holds both signatures and no UNSIGNED. The
// fault it catches is an unsigned release an admin could take for a signed one (silence, a
// leftover signature), or a signed one that still says it is unsigned.
func TestUnsignedCutSaysSo(t *testing.T) {
	dir := theRelease(t)
	if !strings.Contains(first.output, "UNSIGNED") {
		t.Errorf("make release without SIGNING_KEY printed no UNSIGNED:\n%s", first.output)
	}
	note, err := os.ReadFile(filepath.Join(dir, unsignedFile))
	if err != nil || !bytes.Contains(note, []byte("NOT signed")) {
		t.Errorf("%s: %v %q: want a note that the release is not signed", unsignedFile, err, note)
	}
	files := folderFiles(t, dir)
	for _, sig := range []string{sumsSignature, imageSignature} {
		if slices.Contains(files, sig) {
			t.Errorf("the unsigned cut holds %s", sig)
		}
	}
	signedDir, _ := theSignedRelease(t)
	files = folderFiles(t, signedDir)
	if slices.Contains(files, unsignedFile) || !slices.Contains(files, sumsSignature) || !slices.Contains(files, imageSignature) {
		t.Errorf("the signed cut holds %q: want %s and %s, no %s", files, sumsSignature, imageSignature, unsignedFile)
	}
	if strings.Contains(signed.output, "UNSIGNED") {
		t.Errorf("the signed cut says UNSIGNED:\n%s", signed.output)
	}
}
