package probes

import (
	"errors"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// A tracepoint probe completes the tracepoint's BTF arguments (its stub's parameters, less
// the first) and their members; an event probe the attached event's own fields as $FIELD, and
// $comm. Every candidate is one the parser takes.
func TestCompleteTprobeEprobe(t *testing.T) {
	p := kindsParser(t)
	for _, c := range []struct{ line, want string }{
		{"t:sw sched_switch ", "$arg*,$arg1,$arg2,$arg3,$arg4,$comm,$stack,next,preempt,prev,prev_state"},
		{"t:sw sched_switch pr", "preempt,prev,prev_state"},
		{"t:sw sched_switch prev->pi", "prev->pid"},
		{"t:sw sched_switch n=next->co", "n=next->comm"},
		{"t:sw sched_switch $r", ""}, // a tracepoint has no return value
		{"t:sw sched_switch prev->comm:str", "prev->comm:string"},
		{"e:es sched.sched_switch $prev_p", "$prev_pid,$prev_prio"},
		{"e:es sched.sched_switch p=$next_", "p=$next_comm,p=$next_pid,p=$next_prio"},
		{"e:es sched.sched_switch $co", "$comm"},
		{"e:es sched.sched_switch $prev_pid:u", "$prev_pid:u16,$prev_pid:u32,$prev_pid:u64,$prev_pid:u8,$prev_pid:ustring"},
		{"e:es sched.sched_switch %", ""},
		{"e:es sched.sched_switch $prev_pid if ", ""}, // a filter: not a fetch argument
		{"e:es no.such $", ""},
	} {
		if got := strings.Join(p.Complete(c.line, nil), ","); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.line, got, c.want)
		}
		for _, cand := range p.Complete(c.line, nil) {
			words := strings.Fields(c.line)
			if !strings.HasSuffix(c.line, " ") {
				words = words[:len(words)-1]
			}
			if strings.HasSuffix(cand, "->") || strings.HasSuffix(cand, ".") {
				continue
			}
			if _, err := p.Parse(strings.Join(words, " ") + " " + cand); err != nil {
				t.Errorf("%q offers %q, which the parser refuses: %v", c.line, cand, err)
			}
		}
	}
}

// The place of t: completes the tracepoints BTF has a stub for (sched_switch in the fixture,
// not sched_wakeup, nor the kprobe kp); that of e: every event as SYSTEM.EVENT; each only
// where the README announces the kind.
func TestCompleteTprobeEprobePlaces(t *testing.T) {
	p := kindsParser(t)
	p.Kernel.events = func() []tracefs.EventName {
		return []tracefs.EventName{{System: "sched", Event: "sched_switch"}, {System: "sched", Event: "sched_wakeup"},
			{System: "kprobes", Event: "kp"}, {System: "syscalls", Event: "sys_enter_openat"}}
	}
	for _, c := range []struct {
		line, want string
		tprobe     bool // the README announces t: (6.12)
	}{
		{"t:sw sched", "sched_switch", true},
		{"t ", "sched_switch", true},
		{"t:sw sched", "", false}, // 6.1
		{"t:sw sched:", "", true},
		{"e:es sched.", "sched.sched_switch,sched.sched_wakeup", true},
		{"e ", "kprobes.kp,sched.sched_switch,sched.sched_wakeup,syscalls.sys_enter_openat", false},
		{"e:es sys", "syscalls.sys_enter_openat", false},
	} {
		q := p
		q.Features.Tprobe = c.tprobe
		if got := strings.Join(q.Complete(c.line, nil), ","); got != c.want {
			t.Errorf("%q (t: %v):\n got %s\nwant %s", c.line, c.tprobe, got, c.want)
		}
	}
	q := p
	q.Features.Eprobe = false
	if got := q.Complete("e:es sched.", nil); len(got) != 0 {
		t.Errorf("no e: announced, offered %v", got)
	}
}

// probe args t:...: the tracepoint's arguments from its stub's BTF, less the probe's data.
func TestTracepointArgs(t *testing.T) {
	k := kindsParser(t).Kernel
	k.events = func() []tracefs.EventName { return []tracefs.EventName{{System: "sched", Event: "sched_switch"}} }
	info, err := k.TracepointArgs("sched", "sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range info.Params {
		got = append(got, p.Type+" "+p.Name)
	}
	if info.Kind != "tracepoint" || info.System != "sched" || strings.Join(got, ",") != "_Bool preempt,struct task_struct * prev,struct task_struct * next,unsigned int prev_state" {
		t.Errorf("%+v %q", info, got)
	}
	for _, c := range []struct{ system, name string }{{"", "sched_wakeup"}, {"irq", "sched_switch"}} {
		_, err := k.TracepointArgs(c.system, c.name)
		var nf *NoFuncError
		if !errors.As(err, &nf) || !nf.Tracepoint || !strings.Contains(err.Error(), "no such tracepoint") {
			t.Errorf("%s:%s: %v", c.system, c.name, err)
		}
	}
	if !k.IsTracepoint("sched_switch") || k.IsTracepoint("vfs_read") {
		t.Error("IsTracepoint")
	}
}
