package profile

import "errors"

// ErrInvalid (temporary until load.go lands).
var ErrInvalid = errors.New("invalid profile")
