//go:build vmtest

package vmtest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ftctl/ftctl/internal/fixture"
)

// armed runs `ftctl flight arm ARGS...` and returns it, its stderr, and a wait for the n-th
// occurrence of a text in it.
func armed(t *testing.T, env []string, args ...string) (*exec.Cmd, *fixture.SyncBuffer, func(string, int)) {
	t.Helper()
	cmd := ftctlCommand(t, append([]string{"flight", "arm"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	errb := &fixture.SyncBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// a test that fails leaves arm's session dead, not its probes on the next tests' functions
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); ftctlRun(t, "reset") })
	wait := func(what string, n int) {
		t.Helper()
		for i := 0; i < 300 && strings.Count(errb.String(), what) < n; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if strings.Count(errb.String(), what) < n {
			t.Fatalf("no %d× %q:\n%s", n, what, errb.String())
		}
	}
	return cmd, errb, wait
}

// flightStatus is `flight status NAME -o json`'s one recorder.
type flightStatus struct {
	Events []string `json:"events"`
	Arm    *struct {
		PID      int    `json:"pid"`
		Instance string `json:"instance"`
		Alive    bool   `json:"alive"`
		Triggers []struct {
			Kind  string `json:"kind"`
			Fired int    `json:"fired"`
			Dumps int    `json:"dumps"`
		} `json:"triggers"`
	} `json:"arm"`
	Dumps []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	} `json:"dumps"`
}

func statusOf(t *testing.T, name string) flightStatus {
	t.Helper()
	r := ftctlRun(t, "flight", "status", name, "-o", "json")
	var st []flightStatus
	if r.code != 0 || json.Unmarshal(items(r.stdout), &st) != nil || len(st) != 1 {
		t.Fatalf("flight status %s: %v", name, r)
	}
	return st[0]
}

// bigMarkers writes n markers of about 1000 bytes, so that the dumps have a size.
func bigMarkers(t *testing.T, inst, tag string, n int) {
	t.Helper()
	pad := strings.Repeat("x", 980)
	for i := 0; i < n; i++ {
		write(t, "instances/"+inst+"/trace_marker", fmt.Sprintf("%s-%d %s\n", tag, i, pad))
	}
}

// An event trigger with a filter: the exit of a process named ftrigproc dumps (the markers
// before it in the dump); another exit within --rate makes none; past it the trigger is armed
// again. The dumps are rotated under --max-mb, the oldest removed first (checked against the
// sizes each dump had).
// flight status shows the trigger, its counts and the dumps. SIGKILL of arm leaves the ring
// recording; reset removes the dead arm's instance and leaves the recorder; stop removes
// everything.
func TestFlightArmEvent(t *testing.T) {
	warmProfile(t, profileFile(t, "vmprof.json", vmprof(t, false))) // the rings expanded first: before is after that
	before := controlState(t)
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "trig") })
	if r := ftctlRun(t, "flight", "start", "trig", "-e", "sched:sched_process_exit", "--buffer-kb", "1024"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	// busybox named ftrigproc (an applet it lacks: it says so and exits): one thread, one exit
	// (a Go program's every thread exit is a sched_process_exit)
	proc := filepath.Join(t.TempDir(), "ftrigproc")
	bb, _ := exec.LookPath("true")
	if b, err := os.ReadFile(bb); err != nil || os.WriteFile(proc, b, 0o755) != nil {
		t.Fatal(err)
	}
	trigger := func() { exec.Command(proc).Run() }
	dir := t.TempDir()
	cmd, errb, wait := armed(t, nil, "trig", "-d", dir, "--keep", "0", "--max-mb", "10", "--rate", "3s",
		"--on", `sched:sched_process_exit if comm == "ftrigproc"`)
	wait("armed: SIGUSR1", 1)
	exec.Command("true").Run() // another exit: no dump
	var sizes []int64
	for k := 1; k <= 3; k++ {
		bigMarkers(t, "ftctl-owned-trig", fmt.Sprintf("trig-marker-%d", k), 300)
		trigger()
		wait("trig: dumped", k)
		files, _ := filepath.Glob(filepath.Join(dir, "trig-*.dat"))
		st, err := os.Stat(files[len(files)-1])
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.Size())
		if k == 1 {
			rep := ftctlRun(t, "report", files[len(files)-1])
			if !strings.Contains(rep.stdout, "trig-marker-1-299 ") || !strings.Contains(rep.stdout, "trig-marker-1-0 ") {
				t.Errorf("the first dump lacks the markers before its trigger: %.2000s", rep.stdout)
			}
			trigger() // within --rate
			wait("within the rate limit", 1)
		}
		time.Sleep(3100 * time.Millisecond)
	}
	if n := strings.Count(errb.String(), "trig: dumped"); n != 3 {
		t.Errorf("%d dumps for 3 triggers past --rate and one within:\n%s", n, errb.String())
	}
	// the cap: the newest kept, then each older one while the total stays within 10 MiB (a
	// dump holds kallsyms: some MiB; 4.4 MiB on 6.1, 7.7 on 6.12, so that 3 never fit)
	want, total := 0, int64(0)
	for i := len(sizes) - 1; i >= 0 && (want == 0 || total+sizes[i] <= 10<<20); i-- {
		want, total = want+1, total+sizes[i]
	}
	st := statusOf(t, "trig")
	if len(st.Dumps) != want || want == 3 || !strings.Contains(errb.String(), "removed the old dump") || st.Arm == nil || !st.Arm.Alive || len(st.Arm.Triggers) != 2 ||
		st.Arm.Triggers[1].Kind != "event" || st.Arm.Triggers[1].Fired != 4 || st.Arm.Triggers[1].Dumps != 3 {
		t.Errorf("status after 3 dumps of sizes %v (want %d kept under 10 MiB): %+v %+v", sizes, want, st, st.Arm)
	}
	t.Logf("dump sizes %v; %d kept under --max-mb 10", sizes, len(st.Dumps))
	if r := ftctlRun(t, "flight", "status", "trig"); r.code != 0 || !strings.Contains(r.stdout, "  armed by pid") ||
		!strings.Contains(r.stdout, `trigger event sched:sched_process_exit if comm == "ftrigproc": fired 4, dumped 3`) ||
		!strings.Contains(r.stdout, fmt.Sprintf("  %d dumps on disk", want)) {
		t.Errorf("flight status: %v", r)
	}
	// stop under a live arm: refused (busy), the recorder and the arm left as they were
	if r := ftctlRun(t, "flight", "stop", "trig"); r.code != 5 || !strings.Contains(r.stderr, "armed by process") {
		t.Errorf("flight stop under a live arm: want exit 5 naming the arming process: %v", r)
	}
	if st := statusOf(t, "trig"); st.Arm == nil || !st.Arm.Alive {
		t.Errorf("status after a refused stop: %+v", st.Arm)
	}
	armInstance := st.Arm.Instance
	cmd.Process.Kill()
	cmd.Wait()
	markers(t, "ftctl-owned-trig", 777, 777)
	if r := ftctlRun(t, "reset"); r.code != 0 || !strings.Contains(r.stdout, "kept declared owner trig") {
		t.Errorf("reset after SIGKILL of arm: %v", r)
	}
	if _, err := os.Stat(filepath.Join(tracing, "instances", armInstance)); err == nil {
		t.Errorf("reset left the dead arm's instance %s", armInstance)
	}
	if st := statusOf(t, "trig"); st.Arm == nil || st.Arm.Alive {
		t.Errorf("status after SIGKILL of arm: %+v", st.Arm)
	}
	out := filepath.Join(dir, "after.dat")
	if r := ftctlRun(t, "flight", "dump", "trig", "-w", out); r.code != 0 || !strings.Contains(ftctlRun(t, "report", out).stdout, "flight-marker-777\n") {
		t.Errorf("the ring does not record after arm was killed: %v", r)
	}
	if r := ftctlRun(t, "flight", "stop", "trig"); r.code != 0 {
		t.Fatalf("flight stop: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("state after flight stop:\n%s", lineDiff(before, after))
	}
}

// clockNanosleep sleeps d in the clock_nanosleep(2) system call, which nothing else in the
// guest calls (Go's runtime sleeps with nanosleep; busybox's sleep is not run meanwhile).
func clockNanosleep(t *testing.T, d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	if _, _, e := syscall.Syscall6(syscall.SYS_CLOCK_NANOSLEEP, 1 /* CLOCK_MONOTONIC */, 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0); e != 0 {
		t.Error(e)
	}
}

// A latency trigger: a call of the clock_nanosleep syscall of 300 ms or more dumps, the shorter
// ones do not (the kernel's hist triggers measure each call; the synthetic event's filter
// keeps the slow ones). The test's own calls only: with hrtimer_nanosleep, every task's sleeps,
// a dump came on 6.1 three times with no call of the test's near the threshold (a Go
// runtime's 10 ms sleep over a host stall, most likely: not seen in the hist, added later).
func TestFlightArmLatency(t *testing.T) {
	const fn = "__x64_sys_clock_nanosleep"
	if !strings.Contains(read(t, "available_filter_functions"), "\n"+fn+"\n") {
		t.Skip(fn + " is not traceable here")
	}
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "lat") })
	if r := ftctlRun(t, "flight", "start", "lat", "-e", "sched:sched_process_exit", "--buffer-kb", "128"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	dir := t.TempDir()
	start := time.Now()
	_, errb, wait := armed(t, nil, "lat", "-d", dir, "--rate", "1s", "--on-latency", fn+">300ms")
	wait("armed: SIGUSR1", 1)
	t.Logf("flight arm --on-latency: armed %.1f s after its start (the notice, polled every 0.1 s)", time.Since(start).Seconds())
	inst := statusOf(t, "lat").Arm.Instance
	latencyProbesKind(t, inst)
	// every duration the kernel computed, by task, to say who made a dump the test did not ask
	g := "ftctl_" + strings.ReplaceAll(strings.TrimPrefix(inst, "ftctl-"), "-", "_")
	latHist := "instances/" + inst + "/events/synthetic/" + g + "_lat/trigger"
	write(t, latHist, "hist:keys=common_pid.execname,lat")
	t.Cleanup(func() { os.WriteFile(filepath.Join(tracing, latHist), []byte("!hist:keys=common_pid.execname,lat"), 0) })
	for i := 0; i < 3; i++ {
		clockNanosleep(t, 10*time.Millisecond) // short sleeps, far below the threshold
	}
	time.Sleep(time.Second)
	if strings.Contains(errb.String(), "dumped") {
		t.Fatalf("short sleeps dumped:\n%s\nthe durations by task (µs):\n%s", errb.String(), readIf(strings.TrimSuffix(latHist, "trigger")+"hist"))
	}
	markers(t, "ftctl-owned-lat", 5, 5)
	clockNanosleep(t, 400*time.Millisecond)
	for i := 0; i < 100 && !strings.Contains(errb.String(), "lat: dumped"); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(errb.String(), "lat: dumped") { // what the kernel measured, to tell why
		st := statusOf(t, "lat")
		in := "instances/" + st.Arm.Instance + "/"
		t.Logf("kprobe_profile:\n%s\ndynamic_events:\n%s", readIf("kprobe_profile"), readIf("dynamic_events"))
		for _, f := range []string{"lat_entry", "lat_return"} {
			g := "ftctl_" + strings.ReplaceAll(strings.TrimPrefix(st.Arm.Instance, "ftctl-"), "-", "_")
			t.Logf("%s hist:\n%s", f, readIf(in+"events/"+g+"/"+f+"/hist"))
		}
		t.Logf("%s trace:\n%s", in, readIf(in+"trace"))
	}
	wait("lat: dumped", 1)
	files, _ := filepath.Glob(filepath.Join(dir, "lat-*.dat"))
	if len(files) != 1 || !strings.Contains(ftctlRun(t, "report", files[0]).stdout, "flight-marker-5\n") {
		t.Errorf("the latency dump: %v\n%s", files, errb.String())
	}
	if st := statusOf(t, "lat"); st.Arm == nil || st.Arm.Triggers[1].Kind != "latency" || st.Arm.Triggers[1].Dumps != 1 {
		t.Errorf("status: %+v", st.Arm)
	}
}

// TestFlightArmLatencyNoSuchFunction: a latency trigger on a function the kernel cannot trace
// is invalid input (exit 2), said as `ftctl latency` says it, and arms nothing: before, the
// kernel's refusal of the probe was exit 3 with its own words.
func TestFlightArmLatencyNoSuchFunction(t *testing.T) {
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "latnf") })
	if r := ftctlRun(t, "flight", "start", "latnf", "-e", "sched:sched_process_exit", "--buffer-kb", "128"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	before := controlState(t)
	r := ftctlRun(t, "flight", "arm", "latnf", "-d", t.TempDir(), "--on-latency", "ftctl_no_such_function>1ms")
	if r.code != 2 || !strings.Contains(r.stderr, `"ftctl_no_such_function" is not a traceable function`) {
		t.Errorf("want exit 2 naming the function: %v", r)
	}
	if st := statusOf(t, "latnf"); st.Arm != nil {
		t.Errorf("armed: %+v", st.Arm)
	}
	if after := controlState(t); after != before {
		t.Errorf("state changed:\n%s", lineDiff(before, after))
	}
}

// A latency trigger on each new maximum (FUNC>max): the kernel's onmax() keeps the longest call
// since arming and sends each new one to a synthetic event, which alone wakes arm. The function
// is the clock_nanosleep syscall, which the test calls with durations of its choice and nothing
// else in the guest calls (Go's runtime sleeps with nanosleep): rising calls are maxima, calls
// as long as the maximum may be (by the kernel's measure, a few µs apart), shorter ones never.
// The kernel's own record of the maxima (a hist on the maximum's event, keyed on its value,
// added in arm's instance) is what arm must have fired on, once each, and dumped on (--rate 0;
// maxima read together make one dump).
func TestFlightArmLatencyMax(t *testing.T) {
	const fn = "__x64_sys_clock_nanosleep"
	if !strings.Contains(read(t, "available_filter_functions"), "\n"+fn+"\n") {
		t.Skip(fn + " is not traceable here")
	}
	if !topFS(t).DetectFeatures().Hist.OnmaxTrace {
		t.Skip("no onmax().trace() in this kernel's hist triggers")
	}
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "max") })
	if r := ftctlRun(t, "flight", "start", "max", "-e", "sched:sched_process_exit", "--buffer-kb", "128"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	dir := t.TempDir()
	_, errb, wait := armed(t, nil, "max", "-d", dir, "--rate", "0", "--on-latency", fn+">max")
	wait("armed: SIGUSR1", 1)
	inst := statusOf(t, "max").Arm.Instance
	latencyProbesKind(t, inst)
	g := "ftctl_" + strings.ReplaceAll(strings.TrimPrefix(inst, "ftctl-"), "-", "_")
	maxHist := "instances/" + inst + "/events/synthetic/" + g + "_max/"
	write(t, maxHist+"trigger", "hist:keys=lat")
	t.Cleanup(func() { os.WriteFile(filepath.Join(tracing, maxHist+"trigger"), []byte("!hist:keys=lat"), 0) })
	nsleep := func(d time.Duration) { clockNanosleep(t, d) }
	for _, ms := range []int{200, 300, 450, 450, 450, 450} { // rising, then equal
		nsleep(time.Duration(ms) * time.Millisecond)
	}
	for i := 0; i < 3; i++ { // shorter, each from a new thread: a maximum kept per task would fire
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			nsleep(100 * time.Millisecond)
			close(done)
		}()
		<-done
	}
	// each dump made before the marker is written: the marker is in the 800 ms call's dump
	settled(t, "max", maxHist)
	markers(t, "ftctl-owned-max", 7, 7)
	nsleep(800 * time.Millisecond)
	maxima := settled(t, "max", maxHist)
	t.Logf("the kernel's maxima (µs): %v", maxima)
	// 200, 300, 450 and 800 ms, and up to three more of 450 ms; none of 100 ms (from new tasks).
	// Fewer only if the host stalled the guest for long in a call (its duration grows).
	if len(maxima) < 2 || len(maxima) > 7 || maxima[0] < 200000 || maxima[len(maxima)-1] < 800000 || maxima[len(maxima)-2] >= 800000 {
		t.Errorf("maxima: want those of 200 (the first), 300, 450 and 800 ms, and none of 100 ms; up to three more of 450 ms")
	}
	time.Sleep(500 * time.Millisecond) // a fire more would be seen by now
	tr := statusOf(t, "max").Arm.Triggers[1]
	files, _ := filepath.Glob(filepath.Join(dir, "max-*.dat"))
	sort.Strings(files)
	if tr.Kind != "latency" || tr.Fired != len(maxima) || tr.Dumps != len(files) {
		t.Errorf("the trigger fired %d times and dumped %d, on %d maxima, %d dumps:\n%s", tr.Fired, tr.Dumps, len(maxima), len(files), errb.String())
	}
	if n := strings.Count(errb.String(), "max: dumped"); len(files) == 0 || len(files) != n || n > len(maxima) ||
		!strings.Contains(ftctlRun(t, "report", files[len(files)-1]).stdout, "flight-marker-7\n") {
		t.Errorf("the dumps %v: want one for each read of maxima, the last with the marker written before the 800 ms call:\n%s", files, errb.String())
	}
}

// settled is the maxima the kernel sent (µs, sorted), read off the hist keyed on their value
// at hist, once arm has fired on each and made its dump (the state status reads is saved after
// the dump; maxima read together, one having come while a dump was being made, make one dump).
func settled(t *testing.T, name, hist string) []int {
	t.Helper()
	var maxima []int
	for _, m := range regexp.MustCompile(`(?m)^\{ lat: +(\d+) \}`).FindAllStringSubmatch(read(t, hist+"hist"), -1) {
		v, _ := strconv.Atoi(m[1])
		maxima = append(maxima, v)
	}
	sort.Ints(maxima)
	for i := 0; i < 100 && statusOf(t, name).Arm.Triggers[1].Fired < len(maxima); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	return maxima
}

// latencyProbesKind checks the probes of the latency trigger armed in instance inst: a kprobe and
// a kretprobe wherever the kernel has kprobe_events, as `ftctl latency` (count.LatencyFprobes).
func latencyProbesKind(t *testing.T, inst string) {
	t.Helper()
	g := "ftctl_" + strings.ReplaceAll(strings.TrimPrefix(inst, "ftctl-"), "-", "_")
	want := map[string]string{"lat_entry": "p:", "lat_return": "r"}
	if !exists(filepath.Join(tracing, "kprobe_events")) {
		want = map[string]string{"lat_entry": "f:", "lat_return": "f:"}
	}
	defs := read(t, "dynamic_events")
	for ev, kind := range want {
		found := false
		for _, l := range strings.Split(defs, "\n") {
			if strings.Contains(l, g+"/"+ev+" ") {
				found = true
				if !strings.HasPrefix(l, kind) {
					t.Errorf("the trigger's %s is %q, want a %s probe", ev, l, kind)
				}
			}
		}
		if !found {
			t.Errorf("no %s/%s in dynamic_events:\n%s", g, ev, defs)
		}
	}
}

// The WARN trigger. No WARN can be provoked in the VM: both Debian kernels lack CONFIG_LKDTM
// (the kernel's crash-test module), and every user-reachable WARN is a bug the kernel fixed. A
// WARN's "WARNING: CPU: ..." line is stored by printk like any message, and printk:console
// records it from printk_sprint: a line written to /dev/kmsg takes the same path, so it stands in
// for the WARN here. Another kernel message does not fire.
func TestFlightArmWarn(t *testing.T) {
	if !exists(filepath.Join(tracing, "events/printk/console")) {
		t.Skip("no printk:console event")
	}
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "warn") })
	if r := ftctlRun(t, "flight", "start", "warn", "-e", "sched:sched_process_exit", "--buffer-kb", "128"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	dir := t.TempDir()
	_, errb, wait := armed(t, nil, "warn", "-d", dir, "--on-warn")
	wait("armed: SIGUSR1", 1)
	kmsg := func(s string) {
		if err := os.WriteFile("/dev/kmsg", []byte(s), 0); err != nil {
			t.Fatal(err)
		}
	}
	kmsg("ftctl-test: an ordinary message\n")
	time.Sleep(time.Second)
	if strings.Contains(errb.String(), "dumped") {
		t.Fatalf("an ordinary message dumped:\n%s", errb.String())
	}
	markers(t, "ftctl-owned-warn", 6, 6)
	kmsg("WARNING: CPU: 0 PID: 1 at ftctl-test.c:1 ftctl_test+0x0/0x10\n")
	wait("warn: dumped", 1)
	files, _ := filepath.Glob(filepath.Join(dir, "warn-*.dat"))
	if len(files) != 1 || !strings.Contains(ftctlRun(t, "report", files[0]).stdout, "flight-marker-6\n") {
		t.Errorf("the WARN dump: %v\n%s", files, errb.String())
	}
}

// An armed process takes no CPU while nothing fires: its utime+stime (/proc/PID/stat, clock
// ticks) over an idle minute, with an event, a latency and the WARN trigger armed.
func TestFlightArmIdleCPU(t *testing.T) {
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "idle") })
	if r := ftctlRun(t, "flight", "start", "idle", "-e", "sched:sched_process_exit", "--buffer-kb", "128"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	args := []string{"idle", "-d", t.TempDir(), "--on", `sched:sched_process_exit if comm == "nosuchprog"`, "--on-warn"}
	if strings.Contains(read(t, "available_filter_functions"), "\nhrtimer_nanosleep\n") {
		args = append(args, "--on-latency", "hrtimer_nanosleep>1h")
	}
	cmd, _, wait := armed(t, nil, args...)
	wait("armed: SIGUSR1", 1)
	time.Sleep(2 * time.Second) // its start done
	cpu := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.Atoi(f[11]) // utime, stime: fields 14 and 15
		s, _ := strconv.Atoi(f[12])
		return u + s
	}
	start := cpu()
	for i := 0; i < 30; i++ { // other processes come and go meanwhile: filtered out in the kernel
		exec.Command("true").Run()
		time.Sleep(2 * time.Second)
	}
	used := cpu() - start
	t.Logf("flight arm, idle for 60 s with 3 triggers armed: %d clock ticks of CPU (utime+stime)", used)
	if used > 2 {
		t.Errorf("flight arm used %d ticks while idle", used)
	}
}

// What the systemd unit runs: arm -f PROFILE --stop-at-exit under NOTIFY_SOCKET. The recorder is
// started from the profile; READY=1 comes once armed; SIGHUP applies the changed profile (an
// event more), and a refused one leaves the recorder as it was and arm running (RELOADING=1,
// READY=1 each time); SIGTERM ends arm (143) and stops the recorder.
func TestFlightArmSystemd(t *testing.T) {
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "unit") })
	warmProfile(t, profileFile(t, "vmprof.json", vmprof(t, false)))
	before := controlState(t)
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var errb *fixture.SyncBuffer
	next := func(want string) {
		t.Helper()
		buf := make([]byte, 256)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := conn.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("sd_notify: %q %v, want %q; stderr:\n%s", buf[:n], err, want, errb)
		}
	}
	prof := filepath.Join(t.TempDir(), "unit.yaml")
	profile := func(events ...string) {
		s := "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name: unit\nspec:\n  instance:\n    bufferKB: 128\n  events:\n"
		for _, e := range events {
			s += "    - name: " + e + "\n"
		}
		if err := os.WriteFile(prof, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	profile("sched:sched_process_exit")
	cmd, errb, wait := armed(t, []string{"NOTIFY_SOCKET=" + sock}, "unit", "-d", t.TempDir(), "-f", prof, "--stop-at-exit", "--on-warn")
	next("READY=1")
	wait("armed: SIGUSR1", 1)
	if st := statusOf(t, "unit"); len(st.Events) != 1 {
		t.Fatalf("started from the profile: %+v", st)
	}
	profile("sched:sched_process_exit", "sched:sched_process_fork")
	cmd.Process.Signal(syscall.SIGHUP)
	next("RELOADING=1")
	next("READY=1")
	if st := statusOf(t, "unit"); len(st.Events) != 2 {
		t.Errorf("after SIGHUP with an event more: %+v\n%s", st, errb.String())
	}
	profile("sched:no_such_event")
	cmd.Process.Signal(syscall.SIGHUP)
	next("RELOADING=1")
	next("READY=1")
	if st := statusOf(t, "unit"); len(st.Events) != 2 || !strings.Contains(errb.String(), "not applied") {
		t.Errorf("after SIGHUP with a refused profile: %+v\n%s", st, errb.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if cmd.Wait(); cmd.ProcessState.ExitCode() != 143 {
		t.Errorf("arm after SIGTERM: %d\n%s", cmd.ProcessState.ExitCode(), errb.String())
	}
	if after := controlState(t); after != before {
		t.Errorf("state after arm --stop-at-exit ended:\n%s", lineDiff(before, after))
	}
}
