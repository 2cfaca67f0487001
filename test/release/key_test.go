package release

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/migranet/migranet/test/cluster"
)

// TestProjectKeyIsPublishedAndPrivateOneIsNot: docs/release-key.pub, the key admins verify
// releases with, is a PEM ECDSA P-256 public key, and no file git tracks holds a private key
// (tests and their fixtures aside: they generate throwaway keys). The
// fault it catches is a published key cosign cannot read (the private half, a certificate, a
// truncated file), or the release's private key committed by mistake.
func TestProjectKeyIsPublishedAndPrivateOneIsNot(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "docs", "release-key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
	if err != nil {
		t.Fatalf("docs/release-key.pub: %v", err)
	}
	if k, ok := pub.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("docs/release-key.pub is a %T, want an ECDSA P-256 public key", pub)
	}
	out, err := exec.Command("git", "-C", cluster.RepoRoot(), "grep", "-l", "-I", "-e", "-----BEGIN .*PRIVATE KEY-----", "--", ".", ":!*_test.go", ":!**/testdata/**").Output()
	if err != nil && len(out) > 0 {
		t.Fatal(err)
	}
	for _, f := range bytes.Fields(out) {
		t.Errorf("%s holds a private key: release keys never go in git (SIGNING_KEY=path, outside the tree)", f)
	}
}
