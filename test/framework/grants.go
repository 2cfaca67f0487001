package framework

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/migranet/migranet/test/cluster"
)

// grant is one verb on one resource that the generated roles allow.
type grant struct {
	namespace, group, resource, verb, name string // namespace "" for the ClusterRole; name "" for any
}

func (g grant) String() string {
	where := "cluster-wide"
	if g.namespace != "" {
		where = "in " + g.namespace
	}
	name := ""
	if g.name != "" {
		name = " named " + g.name
	}
	return fmt.Sprintf("%s %s.%s%s %s", g.verb, g.resource, g.group, name, where)
}

// generatedGrants reads manifests/rbac/role.yaml.
func generatedGrants() ([]grant, error) {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "manifests", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	var out []grant
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var role rbacv1.Role // a ClusterRole decodes into the same fields
		err := dec.Decode(&role)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifests/rbac/role.yaml: %w", err)
		}
		for _, r := range role.Rules {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						for _, n := range names {
							out = append(out, grant{role.Namespace, g, res, v, n})
						}
					}
				}
			}
		}
	}
}

// usedBy reports whether the audited request used g.
func (g grant) usedBy(e AuditEvent) bool {
	if e.ObjectRef == nil || e.Verb != g.verb || e.ObjectRef.APIGroup != g.group || e.Resource() != g.resource {
		return false
	}
	if g.namespace != "" && e.ObjectRef.Namespace != g.namespace {
		return false
	}
	return g.name == "" || e.ObjectRef.Name == g.name
}

// exempt reports whether u lets g stay unused.
func (g grant) exempt(u RBACUse) bool { return u.covers(g.namespace, g.group, g.resource, g.verb) }
