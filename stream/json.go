package stream

import "strconv"

// EventSchema is the schema tag every event record begins with (its JSON Schema is
// docs/json/event.schema.json); GraphSchema, every call tree's.
const (
	EventSchema = "ftctl/event/v1"
	GraphSchema = "ftctl/graph/v1"
)

// AppendJSON appends ev as one line of NDJSON (docs/json/event.schema.json):
//
//	{"schema":"ftctl/event/v1","ts":4.634804,"cpu":1,"comm":"cat","pid":154,"flags":".....","event":"function","func":"ksys_write","parent":"do_syscall_64"}
//	{"schema":"ftctl/event/v1","ts":18.05,"cpu":0,"comm":"sh","pid":152,"flags":".N...","event":"open","probe":"do_sys_openat2+0x0/0xe0","args":{"dfd":-100,"path":"/dev/null","bad":null}}
//	{"schema":"ftctl/event/v1","event":"lost","cpu":1,"lost":1849}
//
// Keys come in a fixed order and only when the line had them: "schema" first, then "buffer" (for
// the events of a recording with instances' buffers: FileSource). With raw, the line as read is
// added as "raw". Encoding is by hand (it runs once per event), and every string goes through
// AppendJSONString, so the output is valid JSON whatever bytes the trace held.
func AppendJSON(dst []byte, ev *Event, raw bool) []byte {
	o := jsonObject{b: append(dst, `{"schema":"`+EventSchema+`"`...), open: true}
	if ev.Buffer != nil {
		o.str(`,"buffer":`, ev.Buffer)
	}
	if ev.Kind == KindLost {
		o.key(`,"event":`)
		o.b = append(o.b, `"lost"`...)
		o.int(`,"cpu":`, ev.CPU)
		o.key(`,"lost":`)
		if ev.Lost < 0 {
			o.b = append(o.b, "null"...)
		} else {
			o.b = strconv.AppendInt(o.b, ev.Lost, 10)
		}
		return o.end(ev, raw)
	}
	if ev.TS != nil {
		o.number(`,"ts":`, ev.TS) // a valid JSON number by construction (parseTimestamp)
	}
	if ev.CPU >= 0 {
		o.int(`,"cpu":`, ev.CPU)
	}
	if ev.HasContext || ev.Comm != nil {
		o.str(`,"comm":`, ev.Comm)
		o.int(`,"pid":`, ev.PID)
	}
	if ev.TGID > 0 {
		o.int(`,"tgid":`, ev.TGID)
	}
	if ev.Flags != nil {
		o.str(`,"flags":`, ev.Flags)
	}
	o.str(`,"event":`, ev.EventName())
	switch ev.Kind {
	case KindFunction:
		o.sym(ev.Func, `,"func":`, `,"func_offset":`, `,"func_module":`, `,"func_addr":`)
		if ev.Parent.Name != nil {
			o.sym(ev.Parent, `,"parent":`, `,"parent_offset":`, `,"parent_module":`, `,"parent_addr":`)
		}
		if ev.LastTS != nil {
			o.key(`,"repeats":`)
			o.b = strconv.AppendInt(o.b, ev.Repeats, 10)
			o.number(`,"last_ts":`, ev.LastTS)
		}
	case KindProbe:
		if ev.RetFrom != nil {
			o.str(`,"probe":`, ev.RetFrom)
			o.str(`,"return_to":`, ev.Loc)
		} else {
			o.str(`,"probe":`, ev.Loc)
		}
		if ev.ArgsOK {
			o.args(`,"args":`, ev.Args)
		} else {
			o.str(`,"text":`, ev.Text)
		}
	case KindStack, KindUserStack:
		o.key(`,"stack":`)
		o.b = append(o.b, '[')
		for i, f := range ev.Frames {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = AppendJSONString(o.b, f)
		}
		o.b = append(o.b, ']')
	case KindGraph:
		g := &ev.Graph
		o.key(`,"type":`)
		switch g.Type {
		case GraphEntry:
			o.b = append(o.b, `"entry"`...)
		case GraphExit:
			o.b = append(o.b, `"exit"`...)
		default:
			o.b = append(o.b, `"call"`...)
		}
		if g.Func != nil {
			o.str(`,"func":`, g.Func)
		}
		o.int(`,"depth":`, g.Depth)
		if g.Duration != nil {
			o.number(`,"duration_us":`, g.Duration) // digits and a dot (graphDuration)
		}
		if g.Comment != nil {
			o.str(`,"comment":`, g.Comment)
		}
	default: // marker, print, raw
		o.str(`,"text":`, ev.Text)
		if len(ev.Fields) > 0 {
			o.args(`,"fields":`, ev.Fields)
		}
	}
	return o.end(ev, raw)
}

// jsonObject appends one JSON object's members.
type jsonObject struct {
	b    []byte
	open bool
}

// key starts a member; k is `,"name":` (the comma is dropped for the first member).
func (o *jsonObject) key(k string) {
	if !o.open {
		o.b = append(o.b, '{')
		o.open = true
		k = k[1:]
	}
	o.b = append(o.b, k...)
}

func (o *jsonObject) str(k string, v []byte) {
	o.key(k)
	o.b = AppendJSONString(o.b, v)
}

func (o *jsonObject) number(k string, v []byte) {
	o.key(k)
	o.b = append(o.b, v...)
}

func (o *jsonObject) int(k string, v int) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, int64(v), 10)
}

// args writes name=value pairs as an object: probe arguments, tracepoint fields.
func (o *jsonObject) args(k string, args []Arg) {
	o.key(k)
	o.b = append(o.b, '{')
	for i := range args {
		a := &args[i]
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = AppendJSONString(o.b, a.Name)
		o.b = append(o.b, ':')
		o.b = appendJSONValue(o.b, a.Kind, a.Value)
	}
	o.b = append(o.b, '}')
}

// sym writes a symbol's name, and its offset, module and address when the kernel printed them.
func (o *jsonObject) sym(s Sym, name, offset, module, addr string) {
	o.str(name, s.Name)
	if s.Offset != nil {
		o.str(offset, s.Offset)
	}
	if s.Module != nil {
		o.str(module, s.Module)
	}
	if s.Addr != nil {
		o.str(addr, s.Addr)
	}
}

func (o *jsonObject) end(ev *Event, raw bool) []byte {
	if raw {
		o.str(`,"raw":`, ev.Line)
	}
	return append(o.b, '}', '\n')
}

// appendJSONValue encodes a probe argument: numbers as numbers, strings as strings, (fault) as
// null, arrays as arrays, anything else (hex, chars, symbols) as the string the kernel printed.
func appendJSONValue(dst []byte, kind ValueKind, v []byte) []byte {
	switch kind {
	case ValueNumber:
		return append(dst, v...)
	case ValueFault:
		return append(dst, "null"...)
	case ValueArray:
		dst = append(dst, '[')
		first := true
		Elements(v, func(k ValueKind, el []byte) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSONValue(dst, k, el)
		})
		return append(dst, ']')
	}
	return AppendJSONString(dst, v)
}
