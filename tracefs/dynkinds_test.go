package tracefs

import (
	"reflect"
	"testing"
)

// dynamic_events as 6.12 listed it in the VM (probes of every kind, a multi-point fprobe, a
// synthetic event of a session), with a uprobe line as uprobe_events writes them.
const dynamicEventsFixture = `f:ftcx/fent vfs_read count=count pos=pos flags=file->f_flags
f:ftcx/fret vfs_read%return ret=$retval
t:ftcx/tsw sched_switch arg1=prev->pid arg2=next->pid comm=next->comm:string
e:ftcx/esw sched.sched_switch p=$prev_pid n=$next_comm:string st=$prev_state
f:ftctl/fmulti vfs_read count=count
f:ftctl/fmulti vfs_write count=count
p:kprobes/k vfs_read
r16:kprobes/kr vfs_read
p:uprobes/u /bin/busybox:0x1234
s:synthetic/ftctl_7_0badcafe_lat	u64 lat
`

func TestCountDynamicEvents(t *testing.T) {
	ds := CountDynamicEvents(dynamicEventsFixture)
	want := map[string]int{"fprobe": 2, "fexit": 1, "tprobe": 1, "eprobe": 1, "kprobe": 1, "kretprobe": 1, "uprobe": 1, "synthetic": 1}
	if !reflect.DeepEqual(ds.ByKind, want) || ds.Count != 9 || ds.Owned != 2 {
		t.Errorf("got %d (%d owned) %v, want 9 (2 owned) %v", ds.Count, ds.Owned, ds.ByKind, want)
	}
}

func TestParseEprobeAttachments(t *testing.T) {
	got := ParseEprobeAttachments(dynamicEventsFixture)
	want := map[EventName]string{{"ftcx", "esw"}: "sched.sched_switch"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
}
