package probes

import (
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Completion of a probe definition being typed, for the shells (`ftctl probe add <TAB>`) and
// the console's probe editor: what may stand in its last, partial word. The argument names
// come from the kernel's BTF, as the checks do (Kernel.probed): a function's parameters, the
// members along a `->` chain, `$retval` and its members for return probes.

// fetchTypes are the types a fetch argument may take after ':' (the tracefs README's
// "type:" list on 6.1 and 6.12, less the bitfield form, which needs numbers).
var fetchTypes = []string{"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
	"x8", "x16", "x32", "x64", "char", "string", "ustring", "symbol", "symstr"}

// Complete is the candidates for the last word of line, a kprobe, kretprobe, uprobe, fprobe,
// tracepoint probe or event probe definition being typed (the words before it as typed, the last one partial, "" after a
// space), each the whole word. funcs gives the function names starting with a prefix, for the
// probed place (nil: none); the place of t: (tracepoints BTF has a stub for) and of e:
// (SYSTEM.EVENT) comes from available_events through p.Kernel. Only what this kernel's
// grammar announces is offered (p.Features: the kinds, BTF names and members, $argN, $comm,
// the types); without BTF (p.Kernel), no names.
func (p Parser) Complete(line string, funcs func(prefix string) []string) []string {
	words := strings.Fields(line)
	partial := ""
	if len(words) > 0 && !strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\t") {
		partial, words = words[len(words)-1], words[:len(words)-1]
	}
	if len(words) == 0 {
		return nil
	}
	kind := words[0][0]
	switch {
	case kind == 't' && len(words) == 1: // the tracepoint, where the README announces t:
		if !p.Features.Tprobe || strings.ContainsAny(partial, ":/.") {
			return nil
		}
		return p.Kernel.TracepointNames(partial)
	case kind == 'e' && len(words) == 1: // the attached event, SYSTEM.EVENT
		if !p.Features.Eprobe {
			return nil
		}
		return p.Kernel.EventPlaces(partial)
	case kind == 'e' && len(words) > 1:
		return p.completeEprobe(words, partial)
	case kind == 't' && len(words) > 1:
		var fn *funcBTF
		if p.Features.BTFArgs && p.Kernel != nil {
			fn, _ = p.Kernel.tracepointBTF(words[1])
		}
		return p.completeArg(fn, false, true, partial)
	case kind != 'p' && kind != 'r' && kind != 'f':
		return nil // "-:" removals: nothing to offer
	}
	if len(words) == 1 { // the probed place
		if funcs == nil || strings.ContainsAny(partial, ":+%") {
			return nil
		}
		return funcs(partial)
	}
	place := words[1]
	ret := kind == 'r' || strings.HasSuffix(place, "%return")
	place = strings.TrimSuffix(place, "%return")
	var fn *funcBTF
	entry := !strings.ContainsAny(place, ":+") || strings.HasSuffix(place, "+0")
	if entry && p.Features.BTFArgs {
		fn, _ = p.Kernel.probed("", strings.TrimSuffix(place, "+0")) // BTF names only at a function's entry
	}
	return p.completeArg(fn, ret, entry, partial)
}

// completeArg completes one argument, [NAME=]FETCHARG.
func (p Parser) completeArg(fn *funcBTF, ret, entry bool, partial string) []string {
	name, arg, named := strings.Cut(partial, "=")
	if !named {
		name, arg = "", partial
	}
	return argNamed(name, named, p.completeFetch(fn, ret, entry, arg))
}

// completeEprobe completes an event probe's argument: $FIELD of the attached event's own
// fields (their format read through the Kernel), $comm, a type after ':'; nothing after
// "if" (the filter) or where the format is unknown.
func (p Parser) completeEprobe(words []string, partial string) []string {
	if slices.Contains(words[2:], "if") {
		return nil
	}
	system, event, ok := strings.Cut(words[1], ".")
	if !ok {
		system, event, _ = strings.Cut(words[1], "/")
	}
	f, _ := p.Kernel.eventFormat(system, event)
	if f == nil {
		return nil
	}
	name, arg, named := strings.Cut(partial, "=")
	if !named {
		name, arg = "", partial
	}
	var out []string
	switch {
	case strings.ContainsRune(arg, ':'):
		out = p.completeFetch(nil, false, false, arg) // the types
	case strings.ContainsAny(arg, "(%@+"):
	default:
		names := []string{"$comm"}
		for _, fl := range f.Fields {
			names = append(names, "$"+fl.Name)
		}
		out = matching(names, arg)
	}
	return argNamed(name, named, out)
}

// argNamed puts NAME= back before each candidate when the argument was written with a name.
func argNamed(name string, named bool, out []string) []string {
	if !named {
		return out
	}
	return withPrefix(name+"=", out)
}

// completeFetch completes one fetch argument: a parameter name, a generic variable, a member
// after "->", a type after ':'.
func (p Parser) completeFetch(fn *funcBTF, ret, entry bool, arg string) []string {
	f := p.Features
	if i := strings.LastIndexByte(arg, ':'); i >= 0 {
		types := slices.DeleteFunc(slices.Clone(fetchTypes), func(t string) bool {
			return t == "char" && !f.Char || t == "ustring" && !f.Ustring || t == "symstr" && !f.Symstr
		})
		return withPrefix(arg[:i+1], matching(types, arg[i+1:]))
	}
	if strings.ContainsAny(arg, "(%@+") { // a register, memory, an immediate: no names
		return nil
	}
	if i, sep := lastStep(arg); i >= 0 && f.BTFFields {
		t := chainType(fn, arg[:i])
		if sep == "->" {
			ptr, ok := t.(*btf.Pointer)
			if !ok {
				return nil
			}
			t = skipModifiers(ptr.Target)
		}
		return withPrefix(arg[:i+len(sep)], matching(memberNames(t), arg[i+len(sep):]))
	}
	var names []string
	n := 6 // $argN without BTF: as many as registers carry on x86-64
	if !f.ArgN || !entry || ret && !f.RetArgs {
		n = 0
	}
	if fn != nil {
		if n > 0 {
			n = len(fn.proto.Params)
		}
		for _, prm := range fn.proto.Params {
			if prm.Name != "" {
				names = append(names, prm.Name)
			}
		}
		if len(fn.proto.Params) > 0 {
			names = append(names, "$arg*")
		}
	}
	for i := 1; i <= n; i++ {
		names = append(names, "$arg"+strconv.Itoa(i))
	}
	if ret {
		names = append(names, "$retval")
	}
	if f.Comm {
		names = append(names, "$comm")
	}
	names = append(names, "$stack")
	return matching(names, arg)
}

// lastStep finds the last member step of a fetch argument: "->" (through a pointer) or "."
// (a member of an embedded struct or union); -1 when there is none.
func lastStep(arg string) (int, string) {
	i, j := strings.LastIndex(arg, "->"), strings.LastIndexByte(arg, '.')
	switch {
	case i < 0 && j < 0:
		return -1, ""
	case j > i:
		return j, "."
	}
	return i, "->"
}

// chainType is the type of a fetch argument made of a parameter (or $retval) and its member
// steps ("->" through a pointer, "." into an embedded struct), or nil when BTF does not
// describe it.
func chainType(fn *funcBTF, chain string) btf.Type {
	if fn == nil {
		return nil
	}
	i, sep := lastStep(chain)
	if i < 0 {
		var t btf.Type
		if chain == "$retval" {
			t = fn.proto.Return
		}
		for _, p := range fn.proto.Params {
			if p.Name == chain {
				t = p.Type
			}
		}
		if t == nil {
			return nil
		}
		return skipModifiers(t)
	}
	t := chainType(fn, chain[:i])
	if sep == "->" {
		ptr, ok := t.(*btf.Pointer)
		if !ok {
			return nil
		}
		t = skipModifiers(ptr.Target)
	}
	m, _ := findMember(t, chain[i+len(sep):])
	if m == nil {
		return nil
	}
	return skipModifiers(m.Type)
}

// memberNames is the members of a struct or union, those of its anonymous members included
// (findMember finds them by name).
func memberNames(t btf.Type) []string {
	ms, _ := members(t)
	var out []string
	for _, m := range ms {
		if m.Name != "" {
			out = append(out, m.Name)
			continue
		}
		out = append(out, memberNames(skipModifiers(m.Type))...)
	}
	return out
}

// matching is the names starting with prefix, sorted, each once.
func matching(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func withPrefix(prefix string, names []string) []string {
	for i := range names {
		names[i] = prefix + names[i]
	}
	return names
}
