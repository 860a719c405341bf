package probes

import (
	"strings"
	"testing"
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
