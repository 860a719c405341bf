package cmd

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// Exit codes. What each means for users is in ExitStatuses, the one table.
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // any other failure
	ExitInvalid     = 2   // invalid input: bad flag, argument, pattern or name; nothing changed
	ExitRejected    = 3   // the kernel rejected what was written (its reason is shown)
	ExitUnavailable = 4   // permission denied, forbidden (lockdown), tracefs read-only, or tracefs or a feature missing
	ExitBusy        = 5   // busy: another ftctl holds the lock, or the kernel said EBUSY
	ExitInterrupted = 130 // interrupted with no signal to name (Ctrl-C in the console, a cancelled context)

	// Under `ftctl trace -- COMMAND`, the convention of env(1) and timeout(1): ftctl's own
	// failures are 125, so that they are never taken for the command's status.
	ExitTraceFailed      = 125 // trace -- COMMAND: ftctl itself failed (any of 1-5)
	ExitCommandCannotRun = 126 // trace -- COMMAND: the command was found but cannot be run
	ExitCommandNotFound  = 127 // trace -- COMMAND: the command was not found
)

// ExitSignal is the status of a command ended by signal sig: 128+N, as shells report a
// process a signal killed (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
func ExitSignal(sig syscall.Signal) int { return 128 + int(sig) }

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
	{ExitInvalid, "invalid input: a bad flag, argument, pattern (or one matching nothing) or instance name, an invalid profile, a missing instance (for a write: without --create), a --tracefs that is a file, a change that would leave the filter empty, a clear refused while tracing; nothing was changed"},
	{ExitRejected, "the kernel rejected what was written (its reason is shown, with error_log where it has one)"},
	{ExitUnavailable, "permission denied, forbidden (lockdown, policy), tracefs not mounted or mounted read-only, or a control file or feature this kernel lacks"},
	{ExitBusy, "busy: another ftctl holds the lock past `--lock-timeout`, or the kernel said EBUSY"},
	{ExitTraceFailed, "`ftctl trace -- COMMAND` only: ftctl itself failed (any of 1-5 above, its message says which); otherwise the command's own status is ftctl's"},
	{ExitCommandCannotRun, "`ftctl trace -- COMMAND` only: COMMAND was found but cannot be run (not executable)"},
	{ExitCommandNotFound, "`ftctl trace -- COMMAND` only: COMMAND was not found"},
	{ExitSignal(syscall.SIGHUP), "ended by SIGHUP (128+N for signal N, as shells report it)"},
	{ExitSignal(syscall.SIGINT), "ended by SIGINT (Ctrl-C), or Ctrl-C in the console"},
	{ExitSignal(syscall.SIGTERM), "ended by SIGTERM"},
}

// ErrInvalid marks invalid user input; wrap it (InvalidInput) and the exit code is 2.
var ErrInvalid = errors.New("invalid input")

// ErrInterrupted is returned when a signal (or Ctrl-C in the console) ended the command.
var ErrInterrupted = errors.New("interrupted")

// SignalError says which signal ended the command: the context's cause when Run's handler
// cancelled it. It is ErrInterrupted, with the status 128+N.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// Is makes a SignalError an ErrInterrupted.
func (e *SignalError) Is(target error) bool { return target == ErrInterrupted }

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// CommandStartError: `ftctl trace -- COMMAND` could not find or run COMMAND (127, 126).
type CommandStartError struct {
	Name     string
	NotFound bool
	Err      error
}

func (e *CommandStartError) Error() string {
	return fmt.Sprintf("cannot run %q: %v", e.Name, e.Err)
}

func (e *CommandStartError) Unwrap() error { return e.Err }

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
	case errors.As(err, new(*SignalError)):
		var se *SignalError
		errors.As(err, &se)
		return ExitSignal(se.Signal)
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, new(*CommandStartError)):
		var ce *CommandStartError
		errors.As(err, &ce)
		if ce.NotFound {
			return ExitCommandNotFound
		}
		return ExitCommandCannotRun
	case errors.Is(err, ErrInvalid), errors.Is(err, tracefs.ErrBadInstance), errors.Is(err, tracefs.ErrNoInstance),
		errors.Is(err, tracefs.ErrBadPath), errors.Is(err, probes.ErrSyntax), errors.Is(err, probes.ErrEventExists),
		errors.Is(err, filters.ErrPattern), errors.Is(err, filters.ErrWouldEmpty), errors.Is(err, session.ErrInvalid),
		errors.Is(err, profile.ErrInvalid):
		// (a journal reset cannot read, session.ErrJournal, is 1: reset went on with the rest)
		return ExitInvalid
	case errors.Is(err, tracefs.ErrBusy):
		return ExitBusy
	case errors.Is(err, tracefs.ErrRejected):
		return ExitRejected
	case errors.Is(err, tracefs.ErrNotMounted), errors.Is(err, tracefs.ErrPermission),
		errors.Is(err, tracefs.ErrForbidden), errors.Is(err, tracefs.ErrDisabled),
		errors.Is(err, tracefs.ErrUnavailable), errors.Is(err, tracefs.ErrReadOnly):
		return ExitUnavailable
	}
	return ExitFailure
}

// ExitCodeWithCommand maps an error of `ftctl trace -- COMMAND`: the command's status, the
// signal's 128+N, 126 or 127 when the command could not be run, and 125 for every failure of
// ftctl's own (the table's 1-5), so that a script can tell ftctl's failures from the command's.
func ExitCodeWithCommand(err error) int {
	if errors.As(err, new(*CommandExit)) { // the command's own status, whatever it is
		return ExitCode(err)
	}
	switch code := ExitCode(err); code {
	case ExitFailure, ExitInvalid, ExitRejected, ExitUnavailable, ExitBusy:
		return ExitTraceFailed
	default:
		return code
	}
}
