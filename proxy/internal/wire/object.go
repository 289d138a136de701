package wire

import "encoding/json"

// Object returns v as the JSON object it encodes to, decoded into a map (nil
// for a nil v): a definition's schema of any Go type read as the map the
// catalog and the search surface work on.
func Object(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(b, &m)
	return m, err
}
