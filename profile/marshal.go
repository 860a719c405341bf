package profile

import (
	"bytes"
	"encoding/json"

	"github.com/goccy/go-yaml"
)

// Marshal writes a profile as YAML, in the field order of the types (apiVersion, kind,
// metadata, spec), fields left empty left out: what `ftctl export` prints, and Load reads back.
// Text read from the kernel may hold control characters (a probe's name, an event filter),
// which the YAML writer leaves raw: such a profile is written as JSON instead (YAML too), whose
// escapes keep them off the terminal.
func Marshal(p *Profile) ([]byte, error) {
	b, err := yaml.MarshalWithOptions(p, yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil || !hasControl(b) {
		return b, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// hasControl says whether b holds a control character other than a newline.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' || c == 0x7f {
			return true
		}
	}
	return false
}
