//go:build vmtest

package vmtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A container given tracefs read-only (a read-only bind mount of a read-write tracefs): status
// says so from the mount's own options, every change exits 4 naming the read-only mount (it
// was a bare EROFS and exit 1), and the tracing state is as it was.
func TestReadOnlyTracefs(t *testing.T) {
	const ro = "/mnt/ro-tracing"
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, "mount --bind "+tracing+" "+ro+" && mount -o remount,bind,ro "+ro)
	t.Cleanup(func() { exec.Command("/bin/sh", "-c", "umount "+ro).Run() })
	if !strings.Contains(sh(t, "grep ' "+ro+" ' /proc/self/mountinfo"), " ro,") {
		t.Skip("this busybox mount could not make a read-only bind mount")
	}
	before := sh(t, "cat "+tracing+"/tracing_on "+tracing+"/current_tracer; ls "+tracing+"/instances")

	st := statusJSON(t, "--tracefs", ro)
	if !st.Tracefs.ReadOnly {
		t.Errorf("status of a read-only bind mount: %+v", st.Tracefs)
	}
	if r := ftctlRun(t, "--tracefs", ro, "status"); r.code != 0 || !strings.Contains(r.stdout, "mounted read-only") {
		t.Errorf("status text: %+v", r)
	}
	for _, args := range [][]string{{"instance", "create", "rotest"}, {"filter", "set", "vfs_read"}, {"probe", "add", "p:rotest/x vfs_read"}} {
		r := ftctlRun(t, append([]string{"--tracefs", ro}, args...)...)
		if r.code != 4 || !strings.Contains(r.stderr, "mounted read-only") {
			t.Errorf("%v on a read-only tracefs: exit %d, %q", args, r.code, r.stderr)
		}
	}
	if after := sh(t, "cat "+tracing+"/tracing_on "+tracing+"/current_tracer; ls "+tracing+"/instances"); after != before {
		t.Errorf("state changed:\n%s\nthen\n%s", before, after)
	}
	// The read-write mount is not called read-only.
	if st := statusJSON(t); st.Tracefs.ReadOnly || !strings.HasPrefix(st.Tracefs.Options, "rw") {
		t.Errorf("status of the read-write mount: %+v", st.Tracefs)
	}
}

// --tracefs naming something that is not a tracing directory says so (it exited 0 and blamed
// the kernel: "built without CONFIG_DYNAMIC_FTRACE"), with a did-you-mean for debugfs's root.
func TestTracefsFlagChecked(t *testing.T) {
	r := ftctlRun(t, "--tracefs", "/tmp", "status")
	if r.code != 4 || !strings.Contains(r.stderr, "no tracefs is mounted here") || strings.Contains(r.stderr, "CONFIG_") {
		t.Errorf("--tracefs /tmp: %+v", r)
	}
	r = ftctlRun(t, "--tracefs", "/proc/version", "status")
	if r.code != 2 || !strings.Contains(r.stderr, "not a directory") {
		t.Errorf("--tracefs FILE: %+v", r)
	}
	if err := os.MkdirAll("/mnt/fake-debug/tracing", 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, "mount --bind "+tracing+" /mnt/fake-debug/tracing")
	t.Cleanup(func() { exec.Command("/bin/sh", "-c", "umount /mnt/fake-debug/tracing").Run() })
	r = ftctlRun(t, "--tracefs", "/mnt/fake-debug", "status")
	if r.code != 4 || !strings.Contains(r.stderr, "did you mean /mnt/fake-debug/tracing?") {
		t.Errorf("--tracefs above a tracing directory: %+v", r)
	}
}

// mount honours its directory: with tracefs mounted at the usual place, mounting it elsewhere
// is refused naming where it is (it made a second mount), by DIR or by --tracefs; without DIR it
// says where tracefs is and changes nothing.
func TestMountWhenMountedElsewhere(t *testing.T) {
	if err := os.MkdirAll("/mnt/t2", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("/bin/sh", "-c", "umount /mnt/t2").Run() })
	for _, args := range [][]string{{"mount", "/mnt/t2"}, {"--tracefs", "/mnt/t2", "mount"}} {
		r := ftctlRun(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "already mounted at "+tracing) || mounted(t, "/mnt/t2", "tracefs") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	r := ftctlRun(t, "mount", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stderr, "already mounted at "+tracing) || !strings.Contains(r.stdout, `"mounted": false`) {
		t.Errorf("mount with tracefs mounted: %+v", r)
	}
}

// The console over a read-only tracefs opens read-only instead of dying (it could make no
// private instance): the top level's stream shows, the status bar says read-only, a change is
// refused on screen with why, q exits 0, and nothing changed.
func TestTUIReadOnly(t *testing.T) {
	const ro = "/mnt/ro-tracing-tui"
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, "mount --bind "+tracing+" "+ro+" && mount -o remount,bind,ro "+ro)
	t.Cleanup(func() { exec.Command("/bin/sh", "-c", "umount "+ro).Run() })
	if !strings.Contains(sh(t, "grep ' "+ro+" ' /proc/self/mountinfo"), " ro,") {
		t.Skip("this busybox mount could not make a read-only bind mount")
	}
	state := "cat " + tracing + "/tracing_on " + tracing + "/current_tracer " + tracing + "/set_ftrace_filter; ls " + tracing + "/instances"
	before := sh(t, state)
	r := startTUI(t, "--tracefs", ro, "tui")
	r.waitFor("(read-only)")
	if strings.HasPrefix(before, "1") { // the top level traces: a marker shows in the stream
		sh(t, "echo ro-console-marker > "+tracing+"/trace_marker")
		r.waitFor("ro-console-marker")
	}
	r.keys("O") // tracing on or off
	r.waitFor("the console is read-only")
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d; screen:\n%s", code, r.screen)
	}
	r.restored()
	if after := sh(t, state); after != before {
		t.Errorf("state changed:\n%s\nthen\n%s", before, after)
	}
}
