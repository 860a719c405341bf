package stream

// Probe arguments as the kernel prints them (kernel/trace/trace_probe.c print_probe_args and
// the print_type_* functions): " name=value" each, where value is a decimal number (u8..u64,
// s8..s64, bitfields), "0x..." (x8..x64), "'c'" (char), a symbol ("sym+0x0/0x10"), "(fault)",
// "{a,b,c}" (arrays), or a string in double quotes (string, ustring, $comm, symstr).
//
// The kernel does not escape strings: a file name holding `" x=y` prints as
// path="/tmp/quote" x=y", which reads as two arguments. The parser therefore takes, for each
// string, the first closing quote after which the rest of the line still parses as arguments
// (an unquoted value never holds a '"'), backtracking a bounded number of times. When nothing
// fits, the event keeps its arguments as printed (Event.Text).

// maxArgAttempts bounds the backtracking over candidate closing quotes in one line.
const maxArgAttempts = 64

// parseArgs parses "name=value name=value ..." into ev.Args.
func parseArgs(ev *Event, b []byte, budget *int) bool {
	*budget--
	if *budget < 0 {
		return false
	}
	n := 0
	for n < len(b) && isIdent(b[n]) {
		n++
	}
	if n == 0 || n >= len(b) || b[n] != '=' {
		return false
	}
	name := b[:n]
	v := b[n+1:]
	keep := len(ev.Args)
	push := func(kind ValueKind, val []byte) {
		ev.Args = append(ev.Args, Arg{Name: name, Kind: kind, Value: val})
	}
	// rest parses what follows a value ending at end (exclusive): nothing, or " " and more.
	rest := func(end int) bool {
		if end == len(v) {
			return true
		}
		return v[end] == ' ' && parseArgs(ev, v[end+1:], budget)
	}
	if len(v) > 0 {
		switch v[0] {
		case '"', '{': // a string, or an array: up to the closing quote or brace that ends a value
			closer, kind := byte('"'), ValueString
			if v[0] == '{' {
				closer, kind = '}', ValueArray
			}
			for k := 1; k < len(v); k++ {
				if v[k] != closer || !endsValue(v, k+1) {
					continue
				}
				push(kind, v[1:k])
				if rest(k + 1) {
					return true
				}
				ev.Args = ev.Args[:keep]
				if *budget < 0 {
					return false
				}
			}
			return false
		case '(':
			if len(v) >= 7 && string(v[:7]) == "(fault)" && endsValue(v, 7) {
				push(ValueFault, v[:7])
				if rest(7) {
					return true
				}
				ev.Args = ev.Args[:keep]
				return false
			}
		case '\'':
			if len(v) >= 3 && v[2] == '\'' && endsValue(v, 3) {
				push(ValueOther, v[:3])
				if rest(3) {
					return true
				}
				ev.Args = ev.Args[:keep]
				return false
			}
		}
	}
	end := 0
	for end < len(v) && v[end] != ' ' {
		if v[end] == '"' {
			return false
		}
		end++
	}
	kind := ValueOther
	if isJSONInteger(v[:end]) {
		kind = ValueNumber
	}
	push(kind, v[:end])
	if rest(end) {
		return true
	}
	ev.Args = ev.Args[:keep]
	return false
}

// endsValue says whether a value may end at i: at the end of the line, or before " name=".
func endsValue(v []byte, i int) bool {
	if i == len(v) {
		return true
	}
	if v[i] != ' ' {
		return false
	}
	j := i + 1
	for j < len(v) && isIdent(v[j]) {
		j++
	}
	return j > i+1 && j < len(v) && v[j] == '='
}

// isJSONInteger: "-?(0|[1-9][0-9]*)", which is also how the kernel prints integers.
func isJSONInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 20 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// Elements splits an array value ("1,2,3" or `"a","b"`, the text inside the braces) into its
// elements and calls f for each, with its kind. Strings inside arrays are split the same way as
// arguments: a '"' closes a string only before a ',' or the end.
func Elements(arr []byte, f func(kind ValueKind, val []byte)) {
	for len(arr) > 0 {
		if arr[0] == '"' {
			k := 1
			for ; k < len(arr); k++ {
				if arr[k] == '"' && (k+1 == len(arr) || arr[k+1] == ',') {
					break
				}
			}
			if k < len(arr) {
				f(ValueString, arr[1:k])
				arr = arr[min(k+2, len(arr)):]
				continue
			}
		}
		end := 0
		for end < len(arr) && arr[end] != ',' {
			end++
		}
		el := arr[:end]
		switch {
		case isJSONInteger(el):
			f(ValueNumber, el)
		case string(el) == "(fault)":
			f(ValueFault, el)
		default:
			f(ValueOther, el)
		}
		arr = arr[min(end+1, len(arr)):]
	}
}
