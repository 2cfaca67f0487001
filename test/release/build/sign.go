package main

import (
	"bytes"
	"crypto"
	"crypto/elliptic"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// The files signing adds to a release folder, and the one an unsigned cut writes instead. None
// of them is in SHA256SUMS: the sums of a signed cut and of anyone's unsigned rebuild are equal.
const (
	// ImagePayloadFile is cosign's simple-signing payload of the image index: the repository and
	// the index digest (`cosign sign` signs this same document, and `cosign attach signature`
	// attaches it with its signature). Deterministic: it is in SHA256SUMS.
	ImagePayloadFile = "migranet-image.payload.json"
	SumsSignature    = SumsFile + ".sig"
	ImageSignature   = ImagePayloadFile + ".sig"
	UnsignedFile     = "UNSIGNED"
)

// isSignatureFile reports whether a release file is one that signing writes (or its absence).
func isSignatureFile(name string) bool {
	return name == SumsSignature || name == ImageSignature || name == UnsignedFile
}

// imagePayload is the simple-signing payload naming the index digest in repository (REGISTRY/migranet).
func imagePayload(repository string, digest v1.Hash) ([]byte, error) {
	d, err := name.NewDigest(repository + "@" + digest.String())
	if err != nil {
		return nil, fmt.Errorf("image reference %s@%s: %w", repository, digest, err)
	}
	return payload.Cosign{Image: d}.MarshalJSON()
}

// loadSigner reads the private key at path: a PEM PKCS#8, EC or PKCS#1 key, or a key cosign
// generated (`cosign generate-key-pair`, encrypted with COSIGN_PASSWORD). Signatures are over the
// SHA-256 of the file, as cosign's sign-blob makes them.
func loadSigner(path string) (signature.SignerVerifier, error) {
	pf := func(bool) ([]byte, error) {
		if pw, ok := os.LookupEnv("COSIGN_PASSWORD"); ok {
			return []byte(pw), nil
		}
		return nil, nil
	}
	sv, err := signature.LoadSignerVerifierFromPEMFile(path, crypto.SHA256, pf)
	if err != nil {
		return nil, fmt.Errorf("SIGNING_KEY=%s: not a private key this release can sign with (want PEM, e.g. from `go run ./test/release/build -generate-key FILE` or `cosign generate-key-pair` with COSIGN_PASSWORD set): %w", path, err)
	}
	return sv, nil
}

// signFile writes file.sig beside file: the base64 of the signature over file's bytes, the form
// `cosign sign-blob --key` writes and `cosign verify-blob --key KEY --signature file.sig file` checks.
func signFile(sv signature.Signer, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	sig, err := sv.SignMessage(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("signing %s: %w", filepath.Base(file), err)
	}
	return os.WriteFile(file+".sig", []byte(base64.StdEncoding.EncodeToString(sig)), 0o644)
}

// VerifyFile checks file.sig against file with the public key in PEM, as cosign verify-blob does
// (sigstore's signature.LoadVerifier over SHA-256).
func VerifyFile(publicKeyPEM []byte, file string) error {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(publicKeyPEM)
	if err != nil {
		return err
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	b64, err := os.ReadFile(file + ".sig")
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b64)))
	if err != nil {
		return fmt.Errorf("%s.sig is not base64: %w", filepath.Base(file), err)
	}
	return v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(data))
}

// generateKey writes a new ECDSA P-256 key pair: the private key (PEM PKCS#8, mode 0600) at
// private, the public key (PEM) at public. It refuses to overwrite a private key.
func generateKey(private, public string) error {
	if _, err := os.Stat(private); err == nil {
		return fmt.Errorf("%s exists: a release key is generated once; remove it first to replace it", private)
	}
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(private), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(private, priv, 0o600); err != nil {
		return err
	}
	return os.WriteFile(public, pub, 0o644)
}

// unsignedNote is the UNSIGNED file of a cut made without SIGNING_KEY.
func unsignedNote(version string) string {
	return fmt.Sprintf("migranet %s: this release folder is NOT signed (make release ran without SIGNING_KEY).\n"+
		"SHA256SUMS checks the files against each other only; compare it with the signed release's\n"+
		"SHA256SUMS (a cut of the same commit gives the same bytes) or sign it: docs/install.md.\n", version)
}
