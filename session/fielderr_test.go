package session

import (
	"errors"
	"fmt"
	"testing"
)

// A Spec's refusal names no flag; each front end puts its own word for the field in, once.
func TestFieldErrorReword(t *testing.T) {
	fe := fieldErr(FieldOption, "nosuch", "no such trace option")
	wrapped := fmt.Errorf("declaring x: %w", fe)
	if !errors.Is(wrapped, ErrInvalid) {
		t.Errorf("a FieldError is ErrInvalid")
	}
	if got := wrapped.Error(); got != `declaring x: invalid session: option "nosuch": no such trace option` {
		t.Errorf("neutral words: %q", got)
	}
	r := Reword(wrapped, map[Field]string{FieldOption: "-O"})
	if got := r.Error(); got != `declaring x: invalid session: -O "nosuch": no such trace option` {
		t.Errorf("reworded: %q", got)
	}
	var back *FieldError
	if !errors.As(r, &back) || back.Field != FieldOption || !errors.Is(r, ErrInvalid) {
		t.Errorf("a reworded error is still the FieldError")
	}
	if got := Reword(r, map[Field]string{FieldOption: "spec.instance.options"}).Error(); got != r.Error() {
		t.Errorf("a second Reword changed %q into %q", r.Error(), got)
	}
	if got := Reword(fe, map[Field]string{FieldClock: "--clock"}).Error(); got != fe.Error() {
		t.Errorf("a field without a name keeps its word: %q", got)
	}
	if got := fieldErr(FieldFunctions, "", "select functions for the function tracers").Error(); got != "invalid session: functions select functions for the function tracers" {
		t.Errorf("no value: %q", got)
	}
}
