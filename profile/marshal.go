package profile

import (
	"github.com/goccy/go-yaml"
)

// Marshal writes a profile as YAML, in the field order of the types (apiVersion, kind,
// metadata, spec), fields left empty left out: what `ftctl export` prints, and Load reads back.
func Marshal(p *Profile) ([]byte, error) {
	return yaml.MarshalWithOptions(p, yaml.Indent(2), yaml.IndentSequence(true))
}
