package cmd

import (
	"context"
	"errors"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// Exit codes. What each means for users is in ExitStatuses, the one table.
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // any other failure
	ExitInvalid     = 2   // invalid input: bad flag, argument, pattern or name; nothing changed
	ExitRejected    = 3   // the kernel rejected what was written (its reason is shown)
	ExitUnavailable = 4   // permission denied, forbidden (lockdown), tracefs or a feature missing
	ExitBusy        = 5   // busy: another ftctl holds the lock, or the kernel said EBUSY
	ExitInterrupted = 130 // interrupted (Ctrl-C, SIGTERM, SIGHUP)
)

// ExitStatus is one row of the exit-code table.
type ExitStatus struct {
	Code    int
	Meaning string // a sentence fragment, for people: when ftctl exits with Code
}

// ExitStatuses is the exit-code table, ascending. ExitCode maps errors onto these codes, and
// make docs prints the table into the README and ftctl(1), so that the three cannot disagree.
var ExitStatuses = []ExitStatus{
	{ExitOK, "success"},
	{ExitFailure, "any other failure (e.g. the kernel's list did not match the plan after a retry; the previous list was restored)"},
	{ExitInvalid, "invalid input: a bad flag, argument, pattern (or one matching nothing) or instance name, a missing instance for a read, a change that would leave the filter empty, a clear refused while tracing; nothing was changed"},
	{ExitRejected, "the kernel rejected what was written (its reason is shown, with error_log where it has one)"},
	{ExitUnavailable, "permission denied, forbidden (lockdown, policy), tracefs not mounted, or a control file or feature this kernel lacks"},
	{ExitBusy, "busy: another ftctl holds the lock past `--lock-timeout`, or the kernel said EBUSY"},
	{ExitInterrupted, "interrupted (SIGINT, SIGTERM, SIGHUP)"},
}

// ErrInvalid marks invalid user input; wrap it (InvalidInput) and the exit code is 2.
var ErrInvalid = errors.New("invalid input")

// ErrInterrupted is returned when a signal ended the command.
var ErrInterrupted = errors.New("interrupted")

type invalidInput struct{ err error }

func (e invalidInput) Error() string   { return e.err.Error() }
func (e invalidInput) Unwrap() []error { return []error{ErrInvalid, e.err} }

// InvalidInput marks err as the user's mistake (exit 2).
func InvalidInput(err error) error {
	if err == nil {
		return nil
	}
	return invalidInput{err}
}

// ExitCode maps an error to the exit-code table. It is the only place that does so.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, new(*CommandExit)):
		var ce *CommandExit
		errors.As(err, &ce)
		return ce.Code
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, ErrInvalid), errors.Is(err, tracefs.ErrBadInstance), errors.Is(err, tracefs.ErrNoInstance),
		errors.Is(err, filters.ErrPattern), errors.Is(err, filters.ErrWouldEmpty):
		return ExitInvalid
	case errors.Is(err, tracefs.ErrBusy):
		return ExitBusy
	case errors.Is(err, tracefs.ErrRejected):
		return ExitRejected
	case errors.Is(err, tracefs.ErrNotMounted), errors.Is(err, tracefs.ErrPermission),
		errors.Is(err, tracefs.ErrForbidden), errors.Is(err, tracefs.ErrDisabled),
		errors.Is(err, tracefs.ErrUnavailable):
		return ExitUnavailable
	}
	return ExitFailure
}
