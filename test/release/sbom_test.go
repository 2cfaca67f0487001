package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/migranet/migranet/test/cluster"
)

// cdxComponent is what the test reads of a CycloneDX component.
type cdxComponent struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Purl    string `json:"purl"`
}

// cdxBOM is what the test reads of a CycloneDX SBOM.
type cdxBOM struct {
	BOMFormat    string `json:"bomFormat"`
	SpecVersion  string `json:"specVersion"`
	SerialNumber string `json:"serialNumber"`
	Metadata     struct {
		Timestamp  string       `json:"timestamp"`
		Component  cdxComponent `json:"component"`
		Properties []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"properties"`
	} `json:"metadata"`
	Components []cdxComponent `json:"components"`
}

// goModRequires are the modules go.mod requires (direct and indirect), path → version, with
// replace directives applied, as `go mod edit -json` reads them.
func goModRequires(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = cluster.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	type mod struct{ Path, Version string }
	var gm struct {
		Require []mod
		Replace []struct{ Old, New mod }
	}
	if err := json.Unmarshal(out, &gm); err != nil {
		t.Fatal(err)
	}
	req := map[string]string{}
	for _, r := range gm.Require {
		req[r.Path] = r.Version
	}
	for _, r := range gm.Replace {
		if _, ok := req[r.Old.Path]; ok && r.New.Version != "" {
			req[r.Old.Path] = r.New.Version
		}
	}
	return req
}

// TestSBOMNamesTheLinkedModules: each binary's SBOM (CycloneDX, by cyclonedx-gomod from the
// binary's Go build information) names the release as its main component and, as components,
// exactly the modules the binary links (and the archived binary's SHA-256), each at the version go.mod requires; a module go.mod
// requires that the binary does not link (test-only: ginkgo) is not in it; it carries no serial
// number or timestamp (two cuts give the same bytes). The fault it catches is an SBOM of the
// wrong binary (another platform's, a dev build), of the source tree (every module of go.mod,
// linked or not), a hand-written or stale one, or one that varies per cut.
func TestSBOMNamesTheLinkedModules(t *testing.T) {
	dir, req := theRelease(t), goModRequires(t)
	for _, platform := range cliPlatforms() {
		t.Run(platform, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, sbomFile(platform)))
			if err != nil {
				t.Fatal(err)
			}
			var bom cdxBOM
			if err := json.Unmarshal(data, &bom); err != nil {
				t.Fatalf("%s is not JSON: %v", sbomFile(platform), err)
			}
			if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
				t.Errorf("bomFormat %q specVersion %q, want a CycloneDX document", bom.BOMFormat, bom.SpecVersion)
			}
			if bom.SerialNumber != "" || bom.Metadata.Timestamp != "" {
				t.Errorf("serialNumber %q, timestamp %q: want neither (they differ per cut)", bom.SerialNumber, bom.Metadata.Timestamp)
			}
			if c := bom.Metadata.Component; c.Name != "github.com/migranet/migranet" || c.Version != testVersion {
				t.Errorf("main component %s %s, want github.com/migranet/migranet %s", c.Name, c.Version, testVersion)
			}
			binary := readCLIArchive(t, dir, platform)[0].data
			sum := sha256.Sum256(binary)
			hashed := false
			for _, p := range bom.Metadata.Properties {
				if p.Name == "cdx:gomod:binary:hash:SHA-256" {
					hashed = p.Value == hex.EncodeToString(sum[:])
				}
			}
			if !hashed {
				t.Errorf("the SBOM's cdx:gomod:binary:hash:SHA-256 is not the archived binary's (%x)", sum)
			}
			bi, err := buildinfo.Read(bytes.NewReader(binary))
			if err != nil {
				t.Fatal(err)
			}
			var linked, listed []string
			for _, d := range bi.Deps {
				if d.Replace != nil {
					d = d.Replace
				}
				linked = append(linked, d.Path+"@"+d.Version)
				if want, ok := req[d.Path]; ok && want != d.Version {
					t.Errorf("the binary links %s %s, go.mod requires %s", d.Path, d.Version, want)
				}
			}
			for _, c := range bom.Components {
				listed = append(listed, c.Name+"@"+c.Version)
			}
			slices.Sort(linked)
			slices.Sort(listed)
			if !slices.Equal(linked, listed) {
				t.Errorf("the SBOM lists\n%q\nthe binary links\n%q", listed, linked)
			}
			for _, must := range []string{"k8s.io/client-go@" + req["k8s.io/client-go"], "sigs.k8s.io/controller-runtime@" + req["sigs.k8s.io/controller-runtime"], "kubevirt.io/api@" + req["kubevirt.io/api"]} {
				if !slices.Contains(listed, must) {
					t.Errorf("the SBOM lacks %s, which go.mod requires and the binary links", must)
				}
			}
			if g := "github.com/onsi/ginkgo/v2@" + req["github.com/onsi/ginkgo/v2"]; slices.Contains(listed, g) {
				t.Errorf("the SBOM lists %s, which go.mod requires for tests only: not the binary's", g)
			}
		})
	}
}
