package hist

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The `hist` file of an event (trace_events_hist.c hist_show): one table per hist trigger,
//
//	# event histogram
//	#
//	# trigger info: hist:keys=common_pid.execname:vals=hitcount,count:sort=count.descending:size=2048 [active]
//	#
//
//	{ common_pid: head            [       160] } hitcount:          1  count:       4096
//	...
//
//	Totals:
//	    Hits: 51
//	    Entries: 51
//	    Dropped: 0
//
// A key is printed "NAME: TEXT" as its modifier renders it (.execname "comm [pid]", .syscall
// "name [nr]", .sym "[addr] sym", .log2 "~ 2^N", .buckets=S "~ LO-HI", .hex in hex); a stack
// key spans lines up to the "}" that opens the values. Values are "NAME: N" two spaces apart
// (.percent "NAME (%): F", .graph "NAME: ####").

// Table is one hist trigger's table.
type Table struct {
	Trigger string `json:"trigger"` // as the kernel lists it, without the state
	State   string `json:"state"`   // "active" or "paused"
	Rows    []Row  `json:"rows"`
	Hits    uint64 `json:"hits"`
	Entries uint64 `json:"entries"`
	Dropped uint64 `json:"dropped"`

	keys, vals []Field
}

// Columns names the table's keys and values, in the kernel's order, as its rows label them.
func (t Table) Columns() (keys, values []string) {
	for _, k := range t.keys {
		keys = append(keys, k.Name)
	}
	for _, v := range t.vals {
		values = append(values, valueLabel(v))
	}
	return keys, values
}

// KeyFields are the table's keys as its trigger names them (name, modifier, bucket size).
func (t Table) KeyFields() []Field { return slices.Clone(t.keys) }

// ValueFields are the table's values as its trigger names them.
func (t Table) ValueFields() []Field { return slices.Clone(t.vals) }

// Row is one entry of the table.
type Row struct {
	Keys   []Key   `json:"keys"`
	Values []Value `json:"values"`
}

// Key is one key of a row. Num is the number behind the rendering where there is one: the pid
// of .execname, the syscall number of .syscall, the address of .sym/.sym-offset, the exponent
// N of .log2's "2^N", the low end of a .buckets range, the number itself otherwise.
type Key struct {
	Name   string `json:"name"`
	Text   string `json:"text"` // as printed, spaces trimmed: "head", "sys_read", "vfs_read+0x4/0x370", "2^5", "400-499"
	Num    uint64 `json:"num"`
	HasNum bool   `json:"-"`
	Mod    string `json:"-"` // the key's modifier, as the trigger names it
}

// Value is one value of a row.
type Value struct {
	Name string  `json:"name"` // "hitcount", "count", "hitcount (%)"
	Text string  `json:"text"`
	Num  float64 `json:"num"` // 0 for a .graph bar
}

// Value returns the named value's number (hitcount, a field), false if absent.
func (r Row) Value(name string) (float64, bool) {
	for _, v := range r.Values {
		if v.Name == name {
			return v.Num, true
		}
	}
	return 0, false
}

// ParseOutput parses the text of a hist file into its tables.
func ParseOutput(text string) ([]Table, error) {
	var out []Table
	var cur *Table
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "# trigger info: "):
			info := strings.TrimPrefix(line, "# trigger info: ")
			out = append(out, Table{})
			cur = &out[len(out)-1]
			cur.Trigger, cur.State = info, ""
			if j := strings.LastIndex(info, " ["); j >= 0 && strings.HasSuffix(info, "]") {
				cur.Trigger, cur.State = info[:j], info[j+2:len(info)-1]
			}
			cur.keys, cur.vals = triggerFields(cur.Trigger)
		case cur == nil || strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "{"):
			row := line
			for !rowClosed(row, cur.vals) && i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "{") && lines[i+1] != "" {
				i++
				row += "\n" + lines[i]
			}
			r, err := parseRow(row, cur.keys, cur.vals)
			if err != nil {
				return out, fmt.Errorf("hist line %d: %w", i+1, err)
			}
			cur.Rows = append(cur.Rows, r)
		case strings.TrimSpace(line) == "Totals:":
		default:
			name, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				continue
			}
			switch name {
			case "Hits":
				cur.Hits = n
			case "Entries":
				cur.Entries = n
			case "Dropped":
				cur.Dropped = n
			}
		}
	}
	return out, nil
}

// triggerFields reads keys= and vals= out of the listed trigger.
func triggerFields(trigger string) (keys, vals []Field) {
	spec, _, _ := strings.Cut(trigger, " if ")
	for _, part := range strings.Split(spec, ":") {
		name, list, ok := strings.Cut(part, "=")
		if !ok || (name != "keys" && name != "vals" && name != "values") {
			continue
		}
		fs, err := parseFields("", list)
		if err != nil {
			continue
		}
		if name == "keys" {
			keys = fs
		} else {
			vals = fs
		}
	}
	return keys, vals
}

// valueLabel is how the kernel labels a value (hist_trigger_entry_print).
func valueLabel(f Field) string {
	if f.Mod == "percent" {
		return f.Name + " (%)"
	}
	return f.Name
}

// rowClosed: the row's keys end, the values follow: a "}" then the first value's label.
func rowClosed(row string, vals []Field) bool {
	first := hitcount
	if len(vals) > 0 {
		first = valueLabel(vals[0])
	}
	return strings.Contains(row, "} "+first+":")
}

func parseRow(row string, keys, vals []Field) (Row, error) {
	var r Row
	first := hitcount
	if len(vals) > 0 {
		first = valueLabel(vals[0])
	}
	end := strings.LastIndex(row, "} "+first+":")
	if end < 0 {
		return r, fmt.Errorf("no values in %q", row)
	}
	keyText := strings.TrimPrefix(row[:end], "{")
	valText := row[end+2:]
	for i, k := range keys {
		label := k.Name + ":"
		start := strings.Index(keyText, label)
		if start < 0 {
			return r, fmt.Errorf("key %s missing in %q", k.Name, row)
		}
		text := keyText[start+len(label):]
		if i+1 < len(keys) {
			next := ", " + keys[i+1].Name + ":"
			j := strings.Index(text, next)
			if j < 0 {
				return r, fmt.Errorf("key %s missing in %q", keys[i+1].Name, row)
			}
			keyText = text[j+2:]
			text = text[:j]
		}
		r.Keys = append(r.Keys, parseKey(k, text))
	}
	for i, v := range vals {
		label := valueLabel(v) + ":"
		if !strings.HasPrefix(valText, label) {
			return r, fmt.Errorf("value %s missing in %q", label, row)
		}
		text := valText[len(label):]
		if i+1 < len(vals) {
			j := strings.Index(text, "  "+valueLabel(vals[i+1])+":")
			if j < 0 {
				return r, fmt.Errorf("value %s missing in %q", valueLabel(vals[i+1]), row)
			}
			valText = text[j+2:]
			text = text[:j]
		}
		val := Value{Name: valueLabel(v), Text: strings.TrimSpace(text)}
		if v.Mod != "graph" {
			n, err := strconv.ParseFloat(val.Text, 64)
			if err != nil && v.Mod == "hex" {
				var u uint64
				u, err = strconv.ParseUint(val.Text, 16, 64)
				n = float64(u)
			}
			if err != nil {
				return r, fmt.Errorf("value %s: %q is not a number", v.Name, val.Text)
			}
			val.Num = n
		}
		r.Values = append(r.Values, val)
	}
	return r, nil
}

// parseKey reads a key's rendering as its modifier made it.
func parseKey(f Field, text string) Key {
	text = strings.TrimSpace(text)
	k := Key{Name: f.Name, Text: text, Mod: f.Mod}
	num := func(s string, base int) {
		if n, err := strconv.ParseUint(strings.TrimSpace(s), base, 64); err == nil {
			k.Num, k.HasNum = n, true
		}
	}
	// bracketed: "name [N]" (.execname, .syscall) or "[addr] sym" (.sym, .sym-offset).
	switch f.Mod {
	case "execname", "syscall":
		if j := strings.LastIndex(text, "["); j >= 0 && strings.HasSuffix(text, "]") {
			num(text[j+1:len(text)-1], 10)
			k.Text = strings.TrimSpace(text[:j])
		}
	case "sym", "sym-offset":
		if strings.HasPrefix(text, "[") {
			if j := strings.Index(text, "]"); j > 0 {
				num(text[1:j], 16)
				k.Text = strings.TrimSpace(text[j+1:])
			}
		}
	case "log2":
		k.Text = strings.TrimSpace(strings.TrimPrefix(text, "~"))
		num(strings.TrimPrefix(k.Text, "2^"), 10)
	case "buckets":
		k.Text = strings.TrimSpace(strings.TrimPrefix(text, "~"))
		lo, _, _ := strings.Cut(k.Text, "-")
		num(lo, 10)
	case "hex":
		num(text, 16)
	default:
		if !strings.Contains(text, "\n") {
			num(text, 10)
		}
	}
	return k
}
