package upgrade

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// normalize turns an object into plain JSON values (float64 numbers), so a decoded manifest and
// an object the API server returned compare alike.
func normalize(obj map[string]any) (any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

// differences lists where live does not say what want (a manifest's object) says: maps key by
// key (the API server adds defaults and metadata, so extra keys in live are fine), lists element
// by element and as long, anything else equal. A null in want asks for nothing.
func differences(path string, want, live any) []string {
	switch w := want.(type) {
	case nil:
		return nil
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, have %v", path, live)}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			lv, ok := l[k]
			if !ok && w[k] != nil {
				if m, empty := w[k].(map[string]any); empty && len(m) == 0 {
					continue // an empty object the server drops, e.g. resources: {}
				}
				out = append(out, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			out = append(out, differences(path+"."+k, w[k], lv)...)
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return []string{fmt.Sprintf("%s: want %d items, have %v", path, len(w), live)}
		}
		var out []string
		for i := range w {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), w[i], l[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, live) {
			return []string{fmt.Sprintf("%s: want %v, have %v", path, want, live)}
		}
		return nil
	}
}
