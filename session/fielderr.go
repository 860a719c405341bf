package session

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Field names a part of a Spec, for errors: the front ends name it in their own words (cmd/
// its flag, a profile its path in the file, the console its field).
type Field string

// The Spec's fields that errors name.
const (
	FieldTracer      Field = "tracer"
	FieldFunctions   Field = "functions"
	FieldProbe       Field = "probe"
	FieldEvent       Field = "event"
	FieldEventFilter Field = "event filter"
	FieldBufferKB    Field = "buffer size"
	FieldClock       Field = "clock"
	FieldOption      Field = "option"
)

// FieldError is a refusal of one of a Spec's values, before anything is written. It says what
// was wrong in words that name no flag: "option \"x\": no such trace option"; Words puts a
// front end's name for the field in. It is ErrInvalid.
type FieldError struct {
	Field  Field
	Value  string // as given ("" when the field has no one value)
	Reason string
}

func (e *FieldError) Error() string { return ErrInvalid.Error() + ": " + e.Words(string(e.Field)) }

// Words is the error with name for the field: `-O "x": no such trace option`.
func (e *FieldError) Words(name string) string {
	if e.Value == "" {
		return name + " " + e.Reason
	}
	return name + " " + strconv.Quote(e.Value) + ": " + e.Reason
}

// Is makes a FieldError an ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(f Field, value string, format string, args ...any) error {
	return &FieldError{Field: f, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Reword puts a front end's names for the fields into err's message (names[field]; a field
// without one keeps its own word). The result is still err (errors.Is, errors.As), and a
// second Reword finds nothing left to change.
func Reword(err error, names map[Field]string) error {
	var fe *FieldError
	if !errors.As(err, &fe) || errors.As(err, new(*reworded)) {
		return err
	}
	name, ok := names[fe.Field]
	if !ok {
		return err
	}
	return &reworded{strings.Replace(err.Error(), fe.Error(), ErrInvalid.Error()+": "+fe.Words(name), 1), err}
}

type reworded struct {
	msg string
	err error
}

func (r *reworded) Error() string { return r.msg }
func (r *reworded) Unwrap() error { return r.err }
