package release

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// decodeObjects reads a multi-document YAML manifest.
func decodeObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding the manifest: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// containerImages lists "Kind/name container: image" for every container of every pod template.
func containerImages(objs []*unstructured.Unstructured) map[string]string {
	images := map[string]string{}
	for _, o := range objs {
		for _, field := range []string{"containers", "initContainers"} {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
			for _, c := range cs {
				m, _ := c.(map[string]any)
				name, _ := m["name"].(string)
				image, _ := m["image"].(string)
				images[o.GetKind()+"/"+o.GetName()+" "+name] = image
			}
		}
	}
	return images
}

// TestManifestPinsTheArchivesDigest: the fault it catches is a manifest that would run another
// image than the release's: the digest of one platform's image instead of the index (an arm64
// node would get the amd64 image), a digest taken before the index was finished, a tag without a
// digest, the dev image left in one workload (the probe agent's DaemonSet as much as the
// manager's Deployment), or the wrong registry.
func TestManifestPinsTheArchivesDigest(t *testing.T) {
	dir := theRelease(t)
	digest := imageDigest(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, "migranet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	images := containerImages(decodeObjects(t, data))
	want := testRegistry + "/migranet:" + testVersion + "@" + digest.String()
	var workloads []string
	for where, image := range images {
		workloads = append(workloads, where)
		if image != want {
			t.Errorf("%s runs %q, want %q", where, image, want)
		}
	}
	slices.Sort(workloads)
	if !slices.Contains(workloads, "Deployment/migranet manager") || !slices.Contains(workloads, "DaemonSet/migranet-probe probe") {
		t.Errorf("containers %q: want the manager's and the probe agent's", workloads)
	}
}

// TestChecksumsVerify: the fault it catches is a SHA256SUMS that does not check what an admin
// downloads: a file missing from it (a CLI archive, an SBOM, the krew manifest, the image's
// signing payload), a stale sum (written before a file was: the krew manifest reads the archives'
// sums), a name that is not in the folder, a signature or the UNSIGNED note in it (a signed cut
// and an unsigned rebuild would differ), or a format `sha256sum -c` cannot read.
func TestChecksumsVerify(t *testing.T) {
	dir := theRelease(t)
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || strings.Contains(name, "/") {
			t.Fatalf("SHA256SUMS line %q: want \"<64 hex>  <file>\"", sc.Text())
		}
		listed[name] = sum
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && e.Name() != unsignedFile {
			files = append(files, e.Name())
		}
	}
	if want := releaseFiles(); !slices.Equal(files, want) {
		t.Errorf("the release folder holds %q besides SHA256SUMS and %s, want %q", files, unsignedFile, want)
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); listed[name] != got {
			t.Errorf("SHA256SUMS says %s for %s, the file hashes to %s", listed[name], name, got)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("SHA256SUMS lists %s, which the folder does not hold", name)
	}
}
