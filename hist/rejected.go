package hist

import (
	"errors"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// RejectedError is the kernel refusing a trigger ftctl's checks passed, with its error_log
// entry under the trigger as written.
type RejectedError struct {
	Event     string // SYSTEM:EVENT
	Trigger   string // the text written
	Diagnosis *tracefs.KernelDiagnosis
	Err       error // the tracefs error
}

func (e *RejectedError) Error() string {
	msg := "the kernel rejected the hist trigger on " + e.Event
	if e.Diagnosis != nil {
		return msg + ": " + e.Diagnosis.Message
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap makes it a tracefs.ErrRejected (exit 3) whatever the errno.
func (e *RejectedError) Unwrap() []error { return []error{tracefs.ErrRejected, e.Err} }

// Rejected explains a failed write of trigger to the trigger file of SYSTEM:EVENT: the
// kernel's error_log entry about it, "hist:SYSTEM:EVENT" (trace_events_hist.c hist_err, its
// caret an offset in the trigger), or "event filter parse error" about the text after " if "
// (whose caret is moved onto the trigger). Errors that are not about the text come back as
// they are; a refusal the kernel does not log (too many keys, a size out of range: seen on
// 6.1 and 6.12) is a RejectedError without a diagnosis.
func Rejected(system, event, trigger string, err error) error {
	var te *tracefs.Error
	if !errors.As(err, &te) {
		return err
	}
	loc := "hist:" + system + ":" + event
	_, filter, hasFilter := strings.Cut(trigger, " if ")
	for i := len(te.KernelLog) - 1; i >= 0; i-- {
		le := te.KernelLog[i]
		kd := tracefs.KernelDiagnosis{Message: le.Message, Source: trigger, Pos: -1, Command: le.Command}
		switch {
		case le.Location == loc && le.Command == trigger:
			kd.Pos = le.Pos
		case hasFilter && le.Location == "event filter parse error" && le.Command == strings.TrimSpace(filter):
			if le.Pos >= 0 {
				kd.Pos = strings.Index(trigger, " if ") + len(" if ") + le.Pos
			}
		default:
			continue
		}
		return &RejectedError{Event: system + ":" + event, Trigger: trigger, Diagnosis: &kd, Err: err}
	}
	if errors.Is(err, tracefs.ErrRejected) {
		return &RejectedError{Event: system + ":" + event, Trigger: trigger, Err: err}
	}
	return err
}
