package probes

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/kstr"
	"github.com/ftctl/ftctl/tracefs"
)

// The dynamic_events kinds besides kprobes (kernel/trace/trace_fprobe.c, trace_eprobe.c).
const (
	Fprobe Kind = 'f' // f[N][:[GRP/][EVENT]] SYM[%return] [ARGS]: a function's entry or exit, through ftrace
	Tprobe Kind = 't' // t[:[GRP/][EVENT]] TRACEPOINT [ARGS]: a tracepoint's BTF arguments (6.5+)
	Eprobe Kind = 'e' // e[:[GRP/][EVENT]] SYSTEM.EVENT [ARGS] [if FILTER]: another event's fields (5.15+)
)

// KindName is how `probe list` and `status` name the kind.
func (d *Definition) KindName() string {
	switch d.Kind {
	case Kprobe, Kretprobe:
		if d.Uprobe != nil {
			if d.IsReturn() || d.Uprobe.Return {
				return "uretprobe"
			}
			return "uprobe"
		}
		if d.IsReturn() {
			return "kretprobe"
		}
		return "kprobe"
	case Fprobe:
		if d.IsReturn() {
			return "fexit"
		}
		return "fprobe"
	case Tprobe:
		return "tprobe"
	case Eprobe:
		return "eprobe"
	}
	return ""
}

// kindNames are the three kinds as the kernel's README writes them, for refusals.
var kindNames = map[Kind]string{Fprobe: "fprobe events (f:)", Tprobe: "tracepoint probes (t:)", Eprobe: "event probes (e:)"}

// instead names what this kernel offers in place of a kind it lacks: kprobes where its README
// announces them (it said so on kernels without kprobe_events too).
func instead(ft tracefs.ProbeFeatures) string {
	if ft.Kprobe {
		return "kprobes (p:, r:) may do instead"
	}
	return "nor kprobes (CONFIG_KPROBE_EVENTS): on this kernel only tracepoints (-e) and uprobes (PATH:SYMBOL) are there"
}

// parseDynamic parses an fprobe, tracepoint probe or event probe, in the order the kernel
// checks them (trace_fprobe.c __trace_fprobe_create, trace_eprobe.c __trace_eprobe_create).
func (st *state) parseDynamic(head string) error {
	d, ft := st.d, st.p.Features
	d.Kind = Kind(head[0])
	if !map[Kind]bool{Fprobe: ft.Fprobe, Tprobe: ft.Tprobe, Eprobe: ft.Eprobe}[d.Kind] {
		return &SyntaxError{Source: d.src, Pos: d.tokens[0].start,
			Msg:  "this kernel does not announce " + kindNames[d.Kind],
			Hint: "its tracefs README lists no " + head[:1] + "[:[<group>/][<event>]] definitions; " + instead(ft)}
	}
	evOff := -1
	if i := strings.IndexByte(head[1:], ':'); i >= 0 {
		evOff = i + 2
		d.head.sep = true
	}
	end := len(head)
	if evOff >= 0 {
		end = evOff - 1
	}
	d.head.kind = span{0, end}
	if d.Kind != Eprobe && len(head) > 1 && kstr.IsDigit(head[1]) {
		if err := st.maxActive(head[1:end]); err != nil { // fprobe rethook instances
			return err
		}
	} else if d.Kind != Eprobe {
		d.head.kind = span{0, 1} // the kernel ignores what else stands before ':'
	}
	// The event probe's kernel ignores everything between 'e' and ':' (seen: "e10:G/E" taken).
	if d.Kind == Eprobe {
		d.head.kind = span{0, 1}
		if evOff >= 0 {
			if err := st.parseEventName(head[evOff:], evOff, false); err != nil {
				return err
			}
		}
		if len(d.tokens) < 2 {
			return st.errAt(1, 0, "no attached event: give SYSTEM.EVENT")
		}
		return st.parseEprobe()
	}
	if len(d.tokens) < 2 {
		what := "a function (or a glob of functions)"
		if d.Kind == Tprobe {
			what = "a tracepoint"
		}
		return st.errAt(1, 0, "no probe place: give "+what)
	}
	st.tok = 1
	sym := st.text(1)
	if i := strings.IndexByte(sym, '%'); i >= 0 {
		if d.Kind == Tprobe || sym[i:] != "%return" {
			e := st.err(i, "Invalid probed address suffix")
			if d.Kind == Tprobe {
				e.Hint = "a tracepoint probe has no return"
			}
			return e
		}
		sym = sym[:i]
		d.PercentReturn, st.ret = true, true
	}
	if d.Kind == Tprobe {
		for i := 0; i < len(sym); i++ {
			if c := sym[i]; !kstr.IsAlpha(c) && !kstr.IsDigit(c) && c != '_' {
				e := st.err(i, "Invalid character in tracepoint name")
				e.Hint = "a tracepoint is named without its system: sched_switch, not sched:sched_switch"
				return e
			}
		}
	}
	d.Symbol = sym
	// parse_symbol_and_return(): an argument fetching $retval makes an fprobe an exit probe;
	// a tracepoint has no return value.
	for i := 2; i < len(d.tokens) && !st.ret; i++ {
		t := st.text(i)
		j := strings.Index(t, "$retval")
		if j < 0 || (j+7 < len(t) && (kstr.IsAlpha(t[j+7]) || kstr.IsDigit(t[j+7]) || t[j+7] == '_')) {
			continue
		}
		if d.Kind == Tprobe {
			return st.errAt(i, j, "$retval is not available on probe")
		}
		d.PercentReturn, st.ret = true, true
	}
	if !st.ret && d.MaxActive != 0 {
		return st.errAt(0, 1, "Maxactive is only for function exit")
	}
	st.tok = 0
	if evOff >= 0 {
		if err := st.parseEventName(head[evOff:], evOff, false); err != nil {
			return err
		}
	}
	st.fentry = !st.ret
	if err := st.parseArgs(); err != nil {
		return err
	}
	if d.Kind == Fprobe {
		// register_fprobe(): the symbol is an ftrace filter glob that must select a function
		// ftrace can trace, or the kernel's registration fails after parsing (seen on 6.12:
		// an unknown name, a data symbol, SYM+OFFS and MOD:SYM all "Failed to register").
		if n := st.p.Kernel.functionMatches(sym); n == 0 {
			e := st.errAt(1, 0, "Failed to register probe event")
			e.Hint = "available_filter_functions lists no function " + sym + ": an fprobe takes a function ftrace can trace (or a glob of them), without +OFFSET or MODULE:"
			e.Symbol = sym
			return e
		}
	}
	return nil
}

// parseEprobe parses an event probe after its head: the attached SYSTEM.EVENT, the arguments
// and the "if FILTER" after them, checked against the attached event's format.
func (st *state) parseEprobe() error {
	d := st.d
	st.tok = 1
	attach := st.text(1)
	sep := strings.IndexByte(attach, '/')
	if sep < 0 {
		sep = strings.IndexByte(attach, '.')
	}
	// __trace_eprobe_create(): traceprobe_parse_event_name() logs what is wrong with the
	// name, then NO_EVENT_INFO is logged under the whole word; the last entry is what the
	// kernel (and its selftest, and ftctl's realigned diagnosis) shows. The first goes in
	// the hint.
	noInfo := func(why string) error {
		e := st.err(0, "This requires both group and event name to attach")
		e.Hint = "write the attached event as SYSTEM.EVENT, e.g. sched.sched_switch"
		if why != "" {
			e.Hint = why + ": " + e.Hint
		}
		return e
	}
	switch {
	case sep < 0:
		return noInfo("")
	case sep == 0:
		return noInfo("the group (system) name is not specified")
	case sep+1 > MaxEventNameLen:
		return noInfo("the group (system) name is too long")
	case !isGoodSystemName(attach[:sep]):
		return noInfo("the group (system) name must follow the same rules as C identifiers")
	case sep+1 == len(attach):
		return noInfo("")
	case len(attach)-sep-1 >= MaxEventNameLen:
		return noInfo("the event name is too long")
	case !isGoodName(attach[sep+1:]):
		return noInfo("the event name must follow the same rules as C identifiers")
	}
	d.AttachSystem, d.AttachEvent = attach[:sep], attach[sep+1:]
	d.argEnd = len(d.tokens)
	for i := 2; i < len(d.tokens); i++ {
		if st.text(i) == "if" {
			d.argEnd = i
			break
		}
	}
	if n := d.argEnd - 2; n > MaxArgs {
		e := st.errAt(2+MaxArgs, 0, "Too many arguments are specified")
		e.Hint = fmt.Sprintf("%d arguments: the kernel records at most %d", n, MaxArgs)
		return e
	}
	f, known := st.p.Kernel.eventFormat(d.AttachSystem, d.AttachEvent)
	if known && f == nil {
		e := st.errAt(1, 0, "Attached event does not exist")
		e.Hint = "events/" + d.AttachSystem + "/" + d.AttachEvent + " does not exist"
		return e
	}
	if f != nil {
		if k := st.p.Kernel.dynamicKind(d.AttachSystem, d.AttachEvent); d.AttachSystem == "ftrace" || k == "p" || k == "r" || k == "e" {
			e := st.errAt(1, 0, "Attached event does not exist")
			e.Hint = "an event probe attaches to a tracepoint (or a synthetic event), not to ftrace's own events, a kprobe, a uprobe or another event probe"
			return e
		}
	}
	st.event = f
	if d.argEnd < len(d.tokens) {
		ifTok := d.tokens[d.argEnd]
		if d.argEnd == len(d.tokens)-1 {
			return &SyntaxError{Source: d.src, Pos: ifTok.end + 1, Msg: "No filter rule after 'if'"}
		}
		words := d.tokens[d.argEnd+1:]
		var parts []string
		for _, w := range words {
			parts = append(parts, d.src[w.start:w.end])
		}
		d.Filter = strings.Join(parts, " ")
		var ferr error
		if f != nil {
			ff := eventfilter.FieldsOf(f)
			ff.Event = d.AttachSystem + ":" + d.AttachEvent
			_, ferr = eventfilter.Check(d.Filter, ff)
		} else {
			_, ferr = eventfilter.Parse(d.Filter)
		}
		var fe *eventfilter.Error
		if errors.As(ferr, &fe) {
			hint := fe.Detail
			if fe.Hint != "" {
				hint = strings.TrimSpace(hint + "\n" + fe.Hint)
			}
			return &SyntaxError{Source: d.src, Pos: joinedPos(d.src, words, fe.Pos), Msg: fe.Msg, Hint: hint}
		} else if ferr != nil {
			return ferr
		}
	}
	return st.parseArgs()
}

// joinedPos maps a byte position in words joined by single spaces back to src.
func joinedPos(src string, words []span, pos int) int {
	at := 0
	for i, w := range words {
		n := w.end - w.start
		if pos <= at+n || i == len(words)-1 {
			return min(w.start+pos-at, len(src))
		}
		at += n + 1
	}
	return len(src)
}

// fetchDynamic is what fprobes, tracepoint probes and event probes parse differently from
// kprobes (trace_probe.c parse_probe_arg with TPARG_FL_FPROBE / TPARG_FL_TEVENT): no
// registers, and an event probe's $NAME is a field of the attached event. done is false
// when the kprobe grammar applies.
func (st *state) fetchDynamic(s string, off int) (f *Fetch, err error, done bool) {
	if s == "" {
		return nil, nil, false
	}
	switch {
	case s[0] == '%':
		// parse_probe_arg(): "eprobe and fprobe do not handle registers" logs BAD_VAR, then
		// the fetch it left empty logs BAD_FETCH_ARG at the same place: the last entry, the
		// one the kernel's selftests and ftctl's diagnosis read (seen: 6.1, 6.12).
		e := st.err(off, "Invalid fetch argument")
		e.Hint = "fprobes, tracepoint probes and event probes read no registers: use $argN or a parameter's name"
		if st.d.Kind == Eprobe {
			e.Hint = "an event probe reads the attached event's fields: $FIELD"
		}
		return nil, e, true
	case st.d.Kind != Eprobe:
		return nil, nil, false
	case s[0] == '$':
		f, err := st.eventVar(s[1:], off)
		return f, err, true
	case kstr.IsAlpha(s[0]) || s[0] == '_':
		msg := "Invalid fetch argument"
		if st.p.Features.BTFArgs {
			msg = "BTF is not available or not supported"
		}
		e := st.err(off, msg)
		e.Hint = "an event probe's fields are written $FIELD"
		return nil, e, true
	}
	return nil, nil, false
}

// eventVar is parse_trace_event_arg(): $FIELD of the attached event's own fields (not the
// common_* ones), then $comm.
func (st *state) eventVar(name string, off int) (*Fetch, error) {
	if f := st.event; f != nil {
		for _, fd := range f.Fields {
			if fd.Name == name {
				return &Fetch{Kind: FetchField, Text: name}, nil
			}
		}
	} else if isGoodName(name) && name != "comm" && name != "COMM" {
		return &Fetch{Kind: FetchField, Text: name}, nil // no format to check against
	}
	if name == "comm" || name == "COMM" {
		return &Fetch{Kind: FetchComm, Text: name}, nil
	}
	// 6.5's common parser refuses a field the event lacks as any unknown $-variable, where the
	// '$' is, also inside a dereference (seen: 6.12); before it, trace_eprobe.c found the field
	// after parsing and blamed the whole argument (seen: 6.1). fprobeSeries says which.
	var e *SyntaxError
	if fprobeSeries(st.p.Features) {
		e = st.err(off, "Invalid $-variable specified")
	} else {
		e = st.err(0, "Attached event does not have this field")
	}
	if f := st.event; f != nil {
		var names []string
		for _, fd := range f.Fields {
			names = append(names, fd.Name)
		}
		e.Hint = st.d.AttachSystem + "." + st.d.AttachEvent + "'s fields: $" + strings.Join(names, " $") + " (and $comm)"
	}
	return nil, e
}

// functionMatches counts the functions of available_filter_functions an fprobe's symbol (an
// ftrace glob) selects; -1 when ftctl cannot tell.
func (k *Kernel) functionMatches(glob string) int {
	if k == nil || k.functions == nil {
		return -1
	}
	ix := k.functions()
	if ix == nil {
		return -1
	}
	if strings.Contains(glob, ":") || glob == "" {
		return 0 // ftrace_match_records() without a module: a literal ':' names nothing
	}
	p, err := filters.Compile(glob)
	if err != nil {
		return -1
	}
	return ix.CountMatches(p)
}

// eventFormat is the format of events/SYSTEM/EVENT; known is false when ftctl cannot tell
// (no Kernel, tracefs unreadable).
func (k *Kernel) eventFormat(system, event string) (f *tracefs.Format, known bool) {
	if k == nil || k.format == nil {
		return nil, false
	}
	f, err := k.format(system, event)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	return f, true
}

// dynamicKind is the event's kind in dynamic_events ("" for a tracepoint or when unknown).
func (k *Kernel) dynamicKind(system, event string) string {
	if k == nil || k.dynamic == nil {
		return ""
	}
	return strings.TrimRight(k.dynamic()[tracefs.EventName{System: system, Event: event}], "0123456789")
}

// tracepointBTF is what a tracepoint probe's arguments are checked against: the prototype of
// the tracepoint's stub, __probestub_NAME (where the kernel puts the probe: trace_fprobe.c
// looks its BTF up by that name), without its first parameter (the probe's private data: the
// kernel skips it, TPARG_FL_TPOINT). The btf_trace_NAME typedef has the same types but no
// parameter names (seen on 6.12's BTF). known is false when BTF has no such function (no
// such tracepoint, or one of a module not loaded): left to the kernel, which takes a
// tracepoint probe on a tracepoint it does not know yet (seen on 6.12).
func (k *Kernel) tracepointBTF(name string) (*funcBTF, bool) {
	f, _ := k.lookup("", "__probestub_"+name)
	if f == nil || len(f.proto.Params) == 0 {
		return nil, false
	}
	return &funcBTF{&btf.FuncProto{Return: f.proto.Return, Params: f.proto.Params[1:]}, f.spec, f.module}, true
}
