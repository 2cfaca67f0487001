package release

import (
	"bytes"
	"crypto"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// verifyBlob is `cosign verify-blob --key KEY --signature SIG FILE` as cosign (v2) does it for a
// key file: sigstore's signature.LoadVerifier over the PEM public key with SHA-256, the base64
// signature decoded, VerifySignature over the file's bytes.
func verifyBlob(publicPEM, sigB64, data []byte) error {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(publicPEM)
	if err != nil {
		return err
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sigB64)))
	if err != nil {
		return err
	}
	return v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(data))
}

// TestSignaturesVerify: the signed cut's SHA256SUMS.sig and migranet-image.payload.json.sig
// verify against the key's public half as cosign verify-blob checks them, and the payload is
// cosign's simple-signing document of the image index's digest in REGISTRY/migranet. Each fails
// for one changed byte of the file, for the other file's signature, and for another key. The
// fault it catches is a signature over something else than the file (a digest string, the
// unsigned bytes before a rewrite), a format cosign cannot read (raw bytes, PEM), a payload
// naming a platform image or the wrong repository, or a check that accepts anything.
func TestSignaturesVerify(t *testing.T) {
	dir, pub := theSignedRelease(t)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	_, otherPub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for file, sig := range map[string]string{"SHA256SUMS": sumsSignature, imagePayload: imageSignature} {
		data, s := read(file), read(sig)
		if err := verifyBlob(pub, s, data); err != nil {
			t.Errorf("%s with %s: %v", file, sig, err)
		}
		for _, i := range []int{0, len(data) / 2, len(data) - 1} {
			changed := bytes.Clone(data)
			changed[i] ^= 1
			if verifyBlob(pub, s, changed) == nil {
				t.Errorf("%s with byte %d changed: its signature still verifies", file, i)
			}
		}
		if verifyBlob(otherPub, s, data) == nil {
			t.Errorf("%s: verifies with another key", file)
		}
	}
	// The same check by another standard tool, as docs/install.md shows it: openssl over the DER
	// signature.
	tmp := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	der, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(read(sumsSignature))))
	if err != nil {
		t.Fatal(err)
	}
	sums := read("SHA256SUMS")
	openssl := func(data []byte) (string, error) {
		out, err := exec.Command("openssl", "dgst", "-sha256", "-verify", write("release-key.pub", pub),
			"-signature", write("SHA256SUMS.der", der), write("SHA256SUMS", data)).CombinedOutput()
		return string(out), err
	}
	if out, err := openssl(sums); err != nil || !strings.Contains(out, "Verified OK") {
		t.Errorf("openssl dgst -verify SHA256SUMS: %v %s", err, out)
	}
	changed := bytes.Clone(sums)
	changed[len(changed)/2] ^= 1
	if out, err := openssl(changed); err == nil {
		t.Errorf("openssl verified SHA256SUMS with a changed byte: %s", out)
	}
	if verifyBlob(pub, read(sumsSignature), read(imagePayload)) == nil {
		t.Errorf("SHA256SUMS's signature verifies the image payload")
	}
	var p struct {
		Critical struct {
			Identity struct {
				DockerReference string `json:"docker-reference"`
			} `json:"identity"`
			Image struct {
				DockerManifestDigest string `json:"docker-manifest-digest"`
			} `json:"image"`
			Type string `json:"type"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(read(imagePayload), &p); err != nil {
		t.Fatal(err)
	}
	c := p.Critical
	if c.Type != "cosign container image signature" || c.Identity.DockerReference != testRegistry+"/migranet" ||
		c.Image.DockerManifestDigest != imageDigest(t, dir).String() {
		t.Errorf("payload %+v: want cosign's simple signing of %s/migranet@%s", c, testRegistry, imageDigest(t, dir))
	}
}
