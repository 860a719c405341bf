package eventfilter

import (
	"errors"

	"github.com/ftctl/ftctl/tracefs"
)

// RejectedError is the kernel refusing a filter that ftctl's checks passed, with its
// error_log entry under the user's text.
type RejectedError struct {
	Event     string // SYSTEM:EVENT whose filter file refused it
	Filter    string // the user's text
	Diagnosis *tracefs.KernelDiagnosis
	Err       error // the tracefs error
}

func (e *RejectedError) Error() string {
	msg := "the kernel rejected the event filter for " + e.Event
	if e.Diagnosis != nil {
		return msg + ": " + e.Diagnosis.Message
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap makes a rejection of the filter text a tracefs.ErrRejected (exit 3) whatever errno
// the kernel chose: for some mistakes it returns EPERM (-1) or ENOENT (-2) rather than EINVAL.
func (e *RejectedError) Unwrap() []error { return []error{tracefs.ErrRejected, e.Err} }

// Rejected explains a failed write of filter to event's filter file: the kernel's
// error_log entry about that text ("event filter parse error"), its caret moved onto the
// user's text. Errors that are not the kernel refusing the text (permission, a missing
// event) come back as they are.
func Rejected(event, filter string, err error) error {
	var te *tracefs.Error
	if !errors.As(err, &te) {
		return err
	}
	written := trimSpaceRight(filter)
	for i := len(te.KernelLog) - 1; i >= 0; i-- {
		le := te.KernelLog[i]
		if le.Location != "event filter parse error" || le.Command != written {
			continue
		}
		// ftctl writes the user's text as it is (and a newline, which the kernel strips), so
		// the kernel's offsets are the user's.
		kd := tracefs.KernelDiagnosis{Message: le.Message, Source: filter, Pos: -1, Command: le.Command}
		if le.Pos >= 0 {
			kd.Pos = le.Pos
		}
		return &RejectedError{Event: event, Filter: filter, Diagnosis: &kd, Err: err}
	}
	if errors.Is(err, tracefs.ErrRejected) {
		return &RejectedError{Event: event, Filter: filter, Err: err}
	}
	return err
}
