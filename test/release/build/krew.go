package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// KrewManifestFile is the krew plugin manifest's name in a release folder. krew's index wants it
// as plugins/migranet.yaml; migranet.yaml is the install manifest here, hence the prefix.
const KrewManifestFile = "krew-migranet.yaml"

// The krew manifest's shape: krew's index.Plugin (sigs.k8s.io/krew v0.4.3 pkg/index/types.go),
// apiVersion krew.googlecontainertools.github.com/v1alpha2, the fields a plugin sets.
type krewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   krewMetadata   `json:"metadata"`
	Spec       krewPluginSpec `json:"spec"`
}

type krewMetadata struct {
	Name string `json:"name"`
}

type krewPluginSpec struct {
	Version          string         `json:"version"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Caveats          string         `json:"caveats"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `json:"selector"`
	URI      string       `json:"uri"`
	Sha256   string       `json:"sha256"`
	Bin      string       `json:"bin"`
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// krewManifest renders the krew plugin manifest of the release: one platform per CLI archive, its
// URI baseURL/<archive>, its sha256 read from folder, the binary it holds.
func krewManifest(folder, version, baseURL string) ([]byte, error) {
	p := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: "migranet"},
		Spec: krewPluginSpec{
			Version:          version,
			ShortDescription: "Check and watch KubeVirt live migrations on a dedicated network",
			Description: "migranet gives an existing KubeVirt install a dedicated live-migration network.\n" +
				"Its CLI shows live migrations and the migration network (kubectl migranet status), says\n" +
				"what admission would answer to a migration before it exists (kubectl migranet preflight VMI)\n" +
				"and validates settings offline (kubectl migranet validate FILE).\n",
			Caveats: "status and preflight read what migranet's manager publishes: install migranet in the\n" +
				"cluster first (kubectl apply --server-side -f migranet.yaml of the same release).\n",
		},
	}
	for _, pl := range platforms() {
		name := cliArchiveName(version, pl)
		sum, err := fileSHA256(filepath.Join(folder, name))
		if err != nil {
			return nil, err
		}
		p.Spec.Platforms = append(p.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": pl.os, "arch": pl.arch}},
			URI:      strings.TrimSuffix(baseURL, "/") + "/" + name,
			Sha256:   sum,
			Bin:      pluginName(pl),
		})
	}
	out, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("krew manifest: %w", err)
	}
	return append([]byte(fmt.Sprintf("# krew plugin manifest of migranet %s: kubectl krew install --manifest=%s\n", version, KrewManifestFile)), out...), nil
}
