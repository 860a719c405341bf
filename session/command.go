package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// The command `ftctl trace -- COMMAND` traces is started held before its exec, through a gate:
// ftctl runs itself as `ftctl __exec -- PATH ARGS...`, which waits for one byte on fd 3, so
// that the session can point set_ftrace_pid and set_event_pid at the pid before the command
// runs a single instruction of its own. The gate then execs in place (same pid).

// GateArg is the hidden first argument that makes ftctl the gate (main dispatches it before
// anything else runs: no signal is ignored or caught in the gate).
const GateArg = "__exec"

// Command is a traced command, held at the gate until Release.
type Command struct {
	cmd  *exec.Cmd
	gate *os.File
	done chan error
}

// StartCommand starts argv (argv0 is its resolved path) held at the gate, with the given
// standard streams.
func StartCommand(argv0 string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (*Command, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{GateArg, "--", argv0}, argv[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	r.Close()
	return &Command{cmd: cmd, gate: w, done: make(chan error, 1)}, nil
}

// PID is the command's pid (the gate's, which the command keeps).
func (c *Command) PID() int { return c.cmd.Process.Pid }

// Release lets the command exec and starts waiting for it (Done).
func (c *Command) Release() {
	c.gate.Write([]byte{1})
	c.gate.Close()
	go func() { c.done <- c.cmd.Wait() }()
}

// Abort ends a command never released: the gate sees its pipe closed and exits 127 without
// running the command.
func (c *Command) Abort() {
	c.gate.Close()
	c.cmd.Wait()
}

// Done delivers the command's end (exec.Cmd.Wait's error) once released.
func (c *Command) Done() <-chan error { return c.done }

// Stop ends a released command that is still running: SIGINT (unless the terminal sent it
// already), then SIGKILL after grace. It returns Wait's error.
func (c *Command) Stop(grace time.Duration) error {
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-c.done:
		return err
	case <-time.After(grace):
		c.cmd.Process.Kill()
		return <-c.done
	}
}

// ExitStatus is the status a shell would give for the command's end: its exit code, or 128+N
// when signal N killed it; ok is false when err says nothing of the kind.
func ExitStatus(err error) (code int, ok bool) {
	if err == nil {
		return 0, true
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, false
	}
	if ws, isWS := ee.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return ee.ExitCode(), true
}

// The gate waits and execs on the main thread, the thread group's leader. An execve from
// another thread takes the leader's pid over, but the per-CPU pid filters of tracing
// (set_event_pid, set_ftrace_pid) were decided at that CPU's last context switch, by the
// thread's own pid: until its next one, the command was ignored, and a quick command (cat of a
// small file) lost every event (the demo showed it; TestTraceCommand repeats such a command).
// From the leader, the pid the filter was decided by is the command's.
func init() {
	if len(os.Args) > 1 && os.Args[1] == GateArg {
		runtime.LockOSThread() // init runs on the main thread; so does main, which runs Gate
	}
}

// Gate is the body of `ftctl __exec -- PATH ARGS...`: wait for the go-ahead on fd 3, then exec
// PATH with ARGS with an empty signal mask (the dispositions are the defaults: the gate never
// ignores or catches a signal, and Go's handlers become the defaults at exec). No go-ahead
// (ftctl ended first): exit 127 without running the command. It returns only on failure, with
// the exit status: 127 when PATH is gone, 126 when it cannot be run (env(1)'s convention).
func Gate(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "ftctl: __exec: no command")
		return 127
	}
	gate := os.NewFile(3, "gate")
	var b [1]byte
	if n, _ := io.ReadFull(gate, b[:]); n != 1 {
		return 127
	}
	gate.Close()
	var empty [8]byte // sigset_t as the kernel takes it (8 bytes on Linux)
	const sigSetMask = 2
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetMask, uintptr(unsafe.Pointer(&empty)), 0, uintptr(len(empty)), 0, 0)
	err := syscall.Exec(args[0], args, os.Environ())
	fmt.Fprintf(os.Stderr, "ftctl: exec %s: %v\n", args[0], err)
	if errors.Is(err, syscall.ENOENT) { // the env(1) convention: 127 not found, 126 cannot run
		return 127
	}
	return 126
}

// PlannedPID stands for the pid of a command a dry run does not start: above PID_MAX_LIMIT
// (4194304), so no process has it, and above --buffer-kb's bound, so no other value of a plan
// is it either.
const PlannedPID = 4194305
