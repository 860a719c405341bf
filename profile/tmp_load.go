package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Load (temporary until load.go lands): JSON only.
func Load(name string, data []byte) (*Profile, error) {
	var p Profile
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
	}
	return &p, nil
}

// Validate (temporary).
func (p *Profile) Validate() error { return nil }

// Marshal (temporary): JSON, which YAML readers take.
func Marshal(p *Profile) ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	return append(b, '\n'), err
}
