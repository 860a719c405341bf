package probes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// Tracepoints and events as places: `probe args` for a tracepoint probe's arguments, and the
// names the completion offers after t: and e:.

// ErrNoTprobes: the kernel's tracefs README does not announce tracepoint probes (t:), so
// there are no tracepoint probe arguments to list (exit 4: unavailable, as on 6.1).
var ErrNoTprobes = fmt.Errorf("this kernel's tracefs README does not announce tracepoint probes (t:[<group>/][<event>] <tracepoint>): %w", tracefs.ErrUnavailable)

// TracepointArgs is what a tracepoint probe on the tracepoint can fetch: the parameters of
// its stub __probestub_NAME less the first (tracepointBTF, what the t: checker uses), as
// `bpftrace -lv tracepoint:...` lists a tracepoint's. system, when not "", must hold the
// event (events/SYSTEM/NAME). Errors: a NoFuncError (no such tracepoint in BTF), or the
// tracefs error of BTF that cannot be read (ErrNoBTF: exit 4).
func (k *Kernel) TracepointArgs(system, name string) (*FuncInfo, error) {
	if _, err := k.btf.Vmlinux(); err != nil {
		return nil, err
	}
	if system != "" && k.events != nil {
		if evs := k.events(); evs != nil && !slices.Contains(evs, tracefs.EventName{System: system, Event: name}) {
			return nil, &NoFuncError{Func: system + ":" + name, Tracepoint: true, Suggestions: k.closeEvents(name)}
		}
	}
	f, _ := k.tracepointBTF(name)
	if f == nil {
		return nil, &NoFuncError{Func: name, Tracepoint: true, Suggestions: k.closeEvents(name)}
	}
	info := &FuncInfo{Kind: "tracepoint", Func: name, System: system, Module: f.module, Params: []Param{}, Return: CType(f.proto.Return)}
	for _, p := range f.proto.Params {
		info.Params = append(info.Params, Param{Name: p.Name, Type: CType(p.Type)})
	}
	return info, nil
}

// IsTracepoint reports an event of that name in available_events (any system).
func (k *Kernel) IsTracepoint(name string) bool {
	if k == nil || k.events == nil {
		return false
	}
	return slices.ContainsFunc(k.events(), func(e tracefs.EventName) bool { return e.Event == name })
}

// closeEvents are event names close to name.
func (k *Kernel) closeEvents(name string) []string {
	if k == nil || k.events == nil {
		return nil
	}
	var names []string
	for _, e := range k.events() {
		names = append(names, e.Event)
	}
	return closeNames(strings.Join(names, "\n"), name, 5)
}

// TracepointNames are the tracepoints a t: probe can take whose name starts with prefix: the
// events of available_events that vmlinux's BTF has a stub (__probestub_NAME) for, each
// once, sorted (a module's tracepoints are left out: looking their BTF up reads kallsyms).
func (k *Kernel) TracepointNames(prefix string) []string {
	if k == nil || k.events == nil || k.btf == nil {
		return nil
	}
	vm, err := k.btf.Vmlinux()
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range k.events() {
		if strings.HasPrefix(e.Event, prefix) && findFunc(vm, "__probestub_"+e.Event) != nil {
			out = append(out, e.Event)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// EventPlaces are the events an e: probe can attach to, as SYSTEM.EVENT, starting with
// prefix, sorted.
func (k *Kernel) EventPlaces(prefix string) []string {
	if k == nil || k.events == nil {
		return nil
	}
	var out []string
	for _, e := range k.events() {
		if p := e.System + "." + e.Event; strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
