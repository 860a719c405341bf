// Package hist is the kernel's hist triggers (kernel/trace/trace_events_hist.c): a trigger built
// from keys, values, sort keys and a filter, checked against an event's format and the
// modifiers this kernel's tracefs README announces before anything is written; the kernel's
// error_log realigned under the user's text; and a parser of the `hist` file into rows.
//
// What the README states is checked here (fields exist, values are numeric, .execname is for
// common_pid, .usecs for common_timestamp, sort names a key or value); what only the kernel
// knows (a modifier on a field type it does not take, table limits) is left to it, and its
// error_log entry is shown under the user's text.
package hist

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/tracefs"
)

// ErrInvalid: every *Error is one (errors.Is): a trigger refused before it was written.
var ErrInvalid = errors.New("invalid hist trigger")

// Error is a trigger refused before it reaches the kernel, with where in the user's text.
type Error struct {
	Flag   string // "--key", "--value", "--sort": where the text came from
	Source string // the flag's text
	Pos    int    // byte offset of the mistake in Source
	Msg    string
	Hint   string // what to do, "" if nothing to add
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %q: %s (at byte %d)", e.Flag, e.Source, e.Msg, e.Pos+1)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Field is one key or value: a field name and its modifier ("" for none).
type Field struct {
	Name    string
	Mod     string // "hex", "sym", "sym-offset", "execname", "syscall", "log2", "buckets", "usecs", "percent", "graph"
	Buckets int    // N of .buckets=N
	pos     int    // byte offset in the flag's text, for messages
}

// String is the field as the trigger names it: "count.buckets=100".
func (f Field) String() string {
	switch {
	case f.Mod == "buckets":
		return f.Name + ".buckets=" + strconv.Itoa(f.Buckets)
	case f.Mod != "":
		return f.Name + "." + f.Mod
	}
	return f.Name
}

// SortKey is one sort field.
type SortKey struct {
	Name       string
	Descending bool
	pos        int
}

// Trigger is a hist trigger: hist:keys=...[:vals=...][:sort=...][:size=N] [if FILTER].
type Trigger struct {
	Keys   []Field
	Values []Field
	Sort   []SortKey
	Size   int    // table entries (power of two rounded by the kernel); 0 keeps 2048
	Filter string // an event filter; "" for none

	keySrc, valSrc []string // the flags' texts, for messages
	sortSrc        string
}

// Special fields a trigger may name on any event (trace_events_hist.c parse_field and the README).
const (
	hitcount        = "hitcount"
	commonTimestamp = "common_timestamp"
	commonCPU       = "common_cpu"
	cpuField        = "cpu"
)

// stacktraceKeys names the special key of the call stack: "common_stacktrace" since 6.5,
// "stacktrace" before (seen: 6.1 refuses common_stacktrace; 6.12 takes both as one).
func stacktraceKeys(h tracefs.HistFeatures) []string {
	if h.CommonStacktrace {
		return []string{"common_stacktrace", "stacktrace"}
	}
	return []string{"stacktrace"}
}

// Kernel is what the checks need of the running kernel.
type Kernel struct {
	// Modifiers the README announces ("hex", "sym", ..., "buckets"): tracefs.HistModifiers.
	Modifiers []string
	// Stacktrace: the names of the stack key this kernel takes.
	Stacktrace []string
}

// KernelOf is what the checks need of the kernel's hist features (tracefs.Features.Hist).
func KernelOf(h tracefs.HistFeatures) Kernel {
	return Kernel{Modifiers: h.Modifiers, Stacktrace: stacktraceKeys(h)}
}

// The table's limits (kernel/trace/tracing_map.h): size= is rounded up to a power of two
// between 2^TRACING_MAP_BITS_MIN and 2^TRACING_MAP_BITS_MAX (seen: size=3 is EINVAL on 6.1 and
// 6.12, with nothing in error_log); TRACING_MAP_KEYS_MAX keys (seen: four are EINVAL, unlogged);
// two sort keys (the kernel logs "Too many sort fields (Max = 2)").
const (
	minSize    = 1 << 7
	maxSize    = 1 << 17
	maxKeys    = 3
	maxSortKey = 2
)

// Parse builds a trigger from the flags' texts: each --key is FIELD[.MOD][,FIELD[.MOD]]...,
// each --value FIELD[.MOD][,...], sort FIELD[.descending|.ascending][,...]. Only the syntax is
// checked here; Check checks the names against an event.
func Parse(keys, values []string, sort string, size int, filter string) (*Trigger, error) {
	t := &Trigger{Size: size, Filter: filter, keySrc: keys, valSrc: values, sortSrc: sort}
	if len(keys) == 0 {
		return nil, &Error{Flag: "--key", Msg: "a hist trigger needs at least one key", Hint: "e.g. --key common_pid"}
	}
	for _, k := range keys {
		fs, err := parseFields("--key", k)
		if err != nil {
			return nil, err
		}
		t.Keys = append(t.Keys, fs...)
	}
	for _, v := range values {
		fs, err := parseFields("--value", v)
		if err != nil {
			return nil, err
		}
		t.Values = append(t.Values, fs...)
	}
	if sort != "" {
		off := 0
		for _, part := range strings.Split(sort, ",") {
			name, dir, hasDir := strings.Cut(part, ".")
			sk := SortKey{Name: name, pos: off}
			if !validName(name) {
				return nil, &Error{Flag: "--sort", Source: sort, Pos: off, Msg: "want FIELD[.descending|.ascending]"}
			}
			if hasDir {
				switch dir {
				case "descending":
					sk.Descending = true
				case "ascending":
				default:
					return nil, &Error{Flag: "--sort", Source: sort, Pos: off + len(name) + 1, Msg: fmt.Sprintf("unknown sort direction %q", dir),
						Hint: "a sort field ends with .descending or .ascending (or nothing: ascending)"}
				}
			}
			t.Sort = append(t.Sort, sk)
			off += len(part) + 1
		}
	}
	if len(t.Keys) > maxKeys {
		return nil, &Error{Flag: "--key", Source: strings.Join(keys, ","), Pos: t.Keys[maxKeys].pos, Msg: fmt.Sprintf("at most %d keys (the kernel's TRACING_MAP_KEYS_MAX)", maxKeys)}
	}
	if len(t.Sort) > maxSortKey {
		return nil, &Error{Flag: "--sort", Source: sort, Pos: t.Sort[maxSortKey].pos, Msg: fmt.Sprintf("at most %d sort fields", maxSortKey)}
	}
	if size != 0 && (size < minSize || size > maxSize) {
		return nil, &Error{Flag: "--size", Source: strconv.Itoa(size), Msg: fmt.Sprintf("the table holds between %d and %d entries", minSize, maxSize)}
	}
	if filter != "" {
		if _, err := eventfilter.Parse(filter); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// validName: a C identifier, as event fields and the special names are.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// validModifier: lower-case letters, digits and '-' ("sym-offset").
func validModifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0) {
			return false
		}
	}
	return true
}

func parseFields(flag, src string) ([]Field, error) {
	var out []Field
	off := 0
	for _, part := range strings.Split(src, ",") {
		name, mod, hasMod := strings.Cut(part, ".")
		f := Field{Name: name, pos: off}
		if !validName(name) {
			return nil, &Error{Flag: flag, Source: src, Pos: off, Msg: "want FIELD[.MODIFIER], FIELD a field of the event's format",
				Hint: "fields are separated by commas, e.g. common_pid.execname,fd"}
		}
		if hasMod {
			f.Mod = mod
			if n, ok := strings.CutPrefix(mod, "buckets="); ok {
				b, err := strconv.Atoi(n)
				if err != nil || b < 1 {
					return nil, &Error{Flag: flag, Source: src, Pos: off + len(name) + len(".buckets="), Msg: "a bucket size is a positive number (.buckets=100)"}
				}
				f.Mod, f.Buckets = "buckets", b
			} else if mod == "buckets" {
				return nil, &Error{Flag: flag, Source: src, Pos: off + len(name) + 1, Msg: "a bucket size is needed: .buckets=N"}
			} else if !validModifier(mod) {
				return nil, &Error{Flag: flag, Source: src, Pos: off + len(name) + 1, Msg: fmt.Sprintf("%q is not a modifier (.hex, .log2, .buckets=N...)", mod)}
			}
		}
		out = append(out, f)
		off += len(part) + 1
	}
	return out, nil
}

// Check checks the trigger against an event's format and the kernel's announced modifiers, as
// the kernel's parser will (each README rule); a filter is checked against the event's fields
// (eventfilter.Check). Errors are *Error or *eventfilter.Error.
func (t *Trigger) Check(f *tracefs.Format, k Kernel) error {
	fields := eventfilter.FieldsOf(f)
	lookup := func(name string) (eventfilter.Field, bool) {
		switch name {
		case commonTimestamp, commonCPU:
			return eventfilter.Field{Name: name, Type: "u64"}, true
		}
		return fields.Lookup(name)
	}
	check := func(flag string, srcs []string, list []Field, isKey bool) error {
		for _, fl := range list {
			src := fieldSource(srcs, fl)
			if isKey && slices.Contains(k.Stacktrace, fl.Name) && fl.Mod == "" {
				continue
			}
			if !isKey && fl.Name == hitcount {
				if fl.Mod != "" && fl.Mod != "percent" && fl.Mod != "graph" {
					return &Error{Flag: flag, Source: src, Pos: fl.pos, Msg: "hitcount takes only .percent or .graph"}
				}
			} else {
				ff, ok := lookup(fl.Name)
				if !ok {
					return notFound(flag, src, fl, fields, k, isKey)
				}
				if !isKey && ff.Kind == eventfilter.FieldString {
					return &Error{Flag: flag, Source: src, Pos: fl.pos, Msg: fmt.Sprintf("%s is a string (%s): values must be numeric fields", fl.Name, ff.Type),
						Hint: "a string can be a key (--key " + fl.Name + ")"}
				}
			}
			if fl.Mod == "" {
				continue
			}
			if !slices.Contains(k.Modifiers, fl.Mod) {
				return &Error{Flag: flag, Source: src, Pos: fl.pos + len(fl.Name) + 1, Msg: fmt.Sprintf("unknown modifier .%s", fl.Mod),
					Hint: "this kernel's modifiers (tracefs README): ." + strings.Join(k.Modifiers, " .")}
			}
			switch {
			case fl.Mod == "execname" && fl.Name != "common_pid":
				return &Error{Flag: flag, Source: src, Pos: fl.pos + len(fl.Name) + 1, Msg: ".execname displays a common_pid as a program name: it applies to common_pid only"}
			case (fl.Mod == "log2" || fl.Mod == "buckets") && !isKey:
				// seen on 6.1 and 6.12: "Invalid field modifier"
				return &Error{Flag: flag, Source: src, Pos: fl.pos + len(fl.Name) + 1, Msg: fmt.Sprintf(".%s groups a key: a value cannot take it", fl.Mod),
					Hint: "make the field a key: --key " + fl.String()}
			case (fl.Mod == "percent" || fl.Mod == "graph") && isKey:
				return &Error{Flag: flag, Source: src, Pos: fl.pos + len(fl.Name) + 1, Msg: fmt.Sprintf(".%s displays a value: it applies to --value fields only", fl.Mod)}
			}
		}
		return nil
	}
	if err := check("--key", t.keySrc, t.Keys, true); err != nil {
		return err
	}
	if err := check("--value", t.valSrc, t.Values, false); err != nil {
		return err
	}
	for _, s := range t.Sort {
		if s.Name == hitcount || slices.ContainsFunc(t.Keys, func(f Field) bool { return f.Name == s.Name }) ||
			slices.ContainsFunc(t.Values, func(f Field) bool { return f.Name == s.Name }) {
			continue
		}
		var names []string
		for _, f := range append(slices.Clone(t.Keys), t.Values...) {
			names = append(names, f.Name)
		}
		return &Error{Flag: "--sort", Source: t.sortSrc, Pos: s.pos, Msg: fmt.Sprintf("%s is neither a key nor a value of this trigger", s.Name),
			Hint: "sort by hitcount or one of: " + strings.Join(names, ", ")}
	}
	if t.Filter != "" {
		if _, err := eventfilter.Check(t.Filter, fields); err != nil {
			return err
		}
	}
	return nil
}

// fieldSource finds the flag text a field came from (several --key flags are joined).
func fieldSource(srcs []string, f Field) string {
	for _, s := range srcs {
		if f.pos+len(f.Name) <= len(s) && s[f.pos:f.pos+len(f.Name)] == f.Name {
			return s
		}
	}
	if len(srcs) > 0 {
		return srcs[0]
	}
	return f.String()
}

func notFound(flag, src string, f Field, fields *eventfilter.Fields, k Kernel, isKey bool) error {
	var names []string
	for _, ff := range fields.Own {
		names = append(names, ff.Name)
	}
	other := []string{"common_pid", commonTimestamp, commonCPU}
	if isKey {
		other = append(other, k.Stacktrace[0])
	} else {
		other = append(other, hitcount)
	}
	return &Error{Flag: flag, Source: src, Pos: f.pos, Msg: fmt.Sprintf("%s has no field %s", fields.Event, f.Name),
		Hint: "its fields: " + strings.Join(names, ", ") + "; and " + strings.Join(other, ", ")}
}

// String is the trigger as written to the event's trigger file (without the newline):
// hist:keys=K[,K]:vals=V[,V]:sort=S[,S]:size=N [if FILTER]. Removing it is "!" + String.
func (t *Trigger) String() string {
	var b strings.Builder
	b.WriteString("hist:keys=")
	join := func(fs []Field) {
		for i, f := range fs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.String())
		}
	}
	join(t.Keys)
	if len(t.Values) > 0 {
		b.WriteString(":vals=")
		join(t.Values)
	}
	if len(t.Sort) > 0 {
		b.WriteString(":sort=")
		for i, s := range t.Sort {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.Name)
			if s.Descending {
				b.WriteString(".descending")
			}
		}
	}
	if t.Size > 0 {
		b.WriteString(":size=" + strconv.Itoa(t.Size))
	}
	if t.Filter != "" {
		b.WriteString(" if " + t.Filter)
	}
	return b.String()
}
