package tracefs

// KernelFile is a file outside tracefs's control files that ftctl reads, and why: the FILES
// section of ftctl(1) lists them. They are named here because only this package knows where
// kernel files are (a test in internal/archtest holds every other package to that).
type KernelFile struct {
	Path string
	Use  string
}

// KernelFiles are the files ftctl uses besides tracefs's control files.
var KernelFiles = []KernelFile{
	{DefaultMountPoint, "Where tracefs is usually mounted; `ftctl mount` mounts it there."},
	{"/sys/kernel/debug/tracing", "tracefs automounted under debugfs; used when it is the only " +
		"tracefs mount (or debugfs's tracing directory, on kernels older than 4.1)."},
	{MountInfoPath, "Searched for tracefs unless `--tracefs` or FTCTL_TRACEFS names " +
		"the directory."},
	{"/proc/locks", "Names the process holding the ftctl lock, an flock on the tracefs root " +
		"directory, when a writer has to wait for it."},
	{"/proc/modules", "Compared before a filter is written: a module loaded or unloaded since the " +
		"function index was read makes ftctl plan again."},
	{LockdownPath, "The lockdown level, to explain an EPERM from tracefs."},
	{KallsymsPath, "The kernel's symbols, by which the binary reader of the stream prints code " +
		"addresses (FTCTL_KALLSYMS names another copy), and a probe's symbol is checked before " +
		"the kernel is asked."},
	{BTFDir + "/vmlinux", "The kernel's BTF: the parameters and types `ftctl probe args` lists and probe " +
		"definitions are checked against (BTF argument names, ->field chains, :string)."},
	{BTFDir + "/MODULE", "A loaded module's BTF, for its functions (read only when one is probed)."},
	{"/proc/self/task", "ftctl's own threads, whose events the stream leaves out."},
	{"/proc/PID/status", "A task's process, parent and state: `ftctl reset` tells the children the kernel " +
		"added to a killed session's pid list (function-fork) from another user's pids."},
	{CmdlinePath, "The running kernel's command line, which `ftctl flight boot-config` checks for " +
		"the parameters of a persistent ring buffer."},
	{BootIDPath, "This boot's identity, written into a session's journal of the kernel-wide " +
		"files it changes: `ftctl reset` drops a journal of an earlier boot (the kernel started " +
		"from its defaults) without writing anything."},
}
