package stream

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// sockaddrIn is a struct sockaddr_in in a 28-byte field (the tcp events' saddr): the family in
// host order (x86: little endian), the port and address in network order.
func sockaddrIn(a, b, c, d byte, port uint16) []byte {
	s := make([]byte, 28)
	binary.LittleEndian.PutUint16(s, 2) // AF_INET
	binary.BigEndian.PutUint16(s[2:], port)
	copy(s[4:], []byte{a, b, c, d})
	return s
}

// sockaddrIn6 is a struct sockaddr_in6: family, port, flowinfo (network order), address,
// scope id (host order).
func sockaddrIn6(addr [16]byte, port uint16, flowinfo, scope uint32) []byte {
	s := make([]byte, 28)
	binary.LittleEndian.PutUint16(s, 10) // AF_INET6
	binary.BigEndian.PutUint16(s[2:], port)
	binary.BigEndian.PutUint32(s[4:], flowinfo)
	copy(s[8:], addr[:])
	binary.LittleEndian.PutUint32(s[24:], scope)
	return s
}

// saFields: a sockaddr field, a width and a __data_loc byte array.
const saFields = "name: sa\nID: 9\nformat:\n" +
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" +
	"\tfield:__u8 sa[28];\toffset:8;\tsize:28;\tsigned:0;\n" +
	"\tfield:int len;\toffset:36;\tsize:4;\tsigned:1;\n" +
	"\tfield:__data_loc __u8[] buf;\toffset:40;\tsize:4;\tsigned:0;\n\n" +
	"print fmt: "

// saRecord is a record of saFields: sa, len and buf (placed after the fixed fields).
func saRecord(sa []byte, n int32, buf []byte) []byte {
	r := make([]byte, 44)
	binary.LittleEndian.PutUint16(r, 9)
	copy(r[8:36], sa)
	binary.LittleEndian.PutUint32(r[36:], uint32(n))
	binary.LittleEndian.PutUint32(r[40:], uint32(len(buf))<<16|44)
	return append(r, buf...)
}

func printOf(t *testing.T, print string, record []byte) string {
	t.Helper()
	f, err := tracefs.ParseFormat("test", saFields+print+"\n")
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parsePrintFmt(f, true, nil)
	if err != nil {
		t.Fatalf("%s: %v", print, err)
	}
	var x pfEval
	return string(pf.appendPrint(nil, &x, record))
}

// %pIS[pfsc...] prints a struct sockaddr as lib/vsprintf.c's ip_addr_string does: by its
// family, ip4_addr_string_sa or ip6_addr_string_sa; any other family "(einval)".
func TestPrintFmtSockaddr(t *testing.T) {
	loop6 := [16]byte{15: 1}
	mapped := [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 1}
	doc := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	v4 := sockaddrIn(127, 0, 0, 1, 8080)
	for _, c := range []struct {
		conv string
		sa   []byte
		want string
	}{
		{"%pISpc", v4, "127.0.0.1:8080"},
		{"%pIS", v4, "127.0.0.1"},
		{"%pISc", v4, "127.0.0.1"},
		{"%piS", v4, "127.000.000.001"},
		{"%piSp", v4, "127.000.000.001:8080"},
		{"%pISh", v4, "1.0.0.127"}, // host order, on a little-endian machine
		{"%pISl", v4, "1.0.0.127"},
		{"%pISn", v4, "127.0.0.1"},
		{"%pISpc", sockaddrIn6(loop6, 443, 0, 0), "[::1]:443"},
		{"%pISc", sockaddrIn6(loop6, 443, 0, 0), "::1"},
		{"%pIS", sockaddrIn6(loop6, 443, 0, 0), "0000:0000:0000:0000:0000:0000:0000:0001"},
		{"%piS", sockaddrIn6(loop6, 443, 0, 0), "00000000000000000000000000000001"},
		{"%piSpc", sockaddrIn6(loop6, 443, 0, 0), "[00000000000000000000000000000001]:443"}, // c only with I
		{"%pISpc", sockaddrIn6(mapped, 0, 0, 0), "[::ffff:10.0.0.1]:0"},
		{"%pISpc", sockaddrIn6(doc, 65535, 0, 0), "[2001:db8::1]:65535"},
		{"%pISpfsc", sockaddrIn6(loop6, 443, 0xf0012345, 3), "[::1]:443/74565%3"}, // flowinfo & IPV6_FLOWINFO_MASK
		{"%pISsc", sockaddrIn6(loop6, 443, 0, 7), "[::1]%7"},
		{"%pISpc", make([]byte, 28), "(einval)"}, // AF_UNSPEC
		{"%20pISc", v4, "           127.0.0.1"},
		{"%-12pISc|", v4, "127.0.0.1   |"},
		{"%8pISp", v4, "127.0.0.1:    8080"}, // the port is printed with the conversion's spec too
	} {
		if got := printOf(t, `"`+c.conv+`", REC->sa`, saRecord(c.sa, 0, nil)); got != c.want {
			t.Errorf("%s of %x: %q, want %q", c.conv, c.sa[:8], got, c.want)
		}
	}
}

// %*ph[CDN] prints bytes in hex as hex_string does: the width is the count (at most 64), 1 with
// no width, nothing for 0; a space, ':', '-' or nothing between; never padded.
func TestPrintFmtHexDump(t *testing.T) {
	buf := []byte{0x01, 0xab, 0xff, 0x10}
	long := make([]byte, 70)
	for i := range long {
		long[i] = byte(i)
	}
	for _, c := range []struct {
		print string
		n     int32
		buf   []byte
		want  string
	}{
		{`"[%*phD]", REC->len, __get_dynamic_array(buf)`, 3, buf, "[01-ab-ff]"},
		{`"[%*ph]", REC->len, __get_dynamic_array(buf)`, 4, buf, "[01 ab ff 10]"},
		{`"[%*phC]", REC->len, __get_dynamic_array(buf)`, 2, buf, "[01:ab]"},
		{`"[%*phN]", REC->len, __get_dynamic_array(buf)`, 4, buf, "[01abff10]"},
		{`"[%*phD]", REC->len, __get_dynamic_array(buf)`, 0, buf, "[]"},
		{`"[%*phD]", REC->len, __get_dynamic_array(buf)`, -2, buf, "[01-ab]"}, // a negative width is its absolute value
		{`"[%phD]", __get_dynamic_array(buf)`, 0, buf, "[01]"},
		{`"[%3ph]", __get_dynamic_array(buf)`, 0, buf, "[01 ab ff]"},
		{`"[%*phN]", __get_dynamic_array_len(buf), __get_dynamic_array(buf)`, 0, buf, "[01abff10]"},
		{`"[%*phN]", REC->len, __get_dynamic_array(buf)`, 70, long, "[" + hexOf(long[:64]) + "]"},
		{`"[%*phD]", REC->len, REC->sa`, 4, nil, "[00-00-00-00]"},
	} {
		sa := make([]byte, 28)
		if got := printOf(t, c.print, saRecord(sa, c.n, c.buf)); got != c.want {
			t.Errorf("%s with len %d: %q, want %q", c.print, c.n, got, c.want)
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var s []byte
	for _, c := range b {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}

// The kernel's events that print a sockaddr or a hex dump decode now, on both kernels, and print
// a record as the kernel would: tcp_probe (6.1: no %p) and i2c_write (6.12).
func TestPrintFmtKernelSockaddrHex(t *testing.T) {
	find := func(kernel, name string) *tracefs.Format {
		for _, f := range kernelFormats(t, kernel) {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("%s: no format of %s", kernel, name)
		return nil
	}
	d := BinaryDecoder{HashPtr: true}
	probe := find("6.1", "tcp_probe")
	if err := d.Add(probe); err != nil {
		t.Fatalf("6.1 tcp_probe: %v", err)
	}
	pf, err := parsePrintFmt(probe, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := make([]byte, 120)
	copy(r[8:], sockaddrIn(127, 0, 0, 1, 40000))
	copy(r[36:], sockaddrIn(127, 0, 0, 1, 9999))
	binary.LittleEndian.PutUint16(r[68:], 2)
	binary.LittleEndian.PutUint32(r[72:], 0x10)
	binary.LittleEndian.PutUint16(r[76:], 3)
	binary.LittleEndian.PutUint32(r[88:], 10)
	binary.LittleEndian.PutUint64(r[112:], 0x2a)
	var x pfEval
	want := "family=AF_INET src=127.0.0.1:40000 dest=127.0.0.1:9999 mark=0x10 data_len=3 snd_nxt=0x0 snd_una=0x0 snd_cwnd=10 ssthresh=0 snd_wnd=0 srtt=0 rcv_wnd=0 sock_cookie=2a"
	if got := string(pf.appendPrint(nil, &x, r)); got != want {
		t.Errorf("6.1 tcp_probe:\n got %q\nwant %q", got, want)
	}
	i2c := find("6.12", "i2c_write")
	if err := d.Add(i2c); err != nil {
		t.Fatalf("6.12 i2c_write: %v", err)
	}
	if pf, err = parsePrintFmt(i2c, true, nil); err != nil {
		t.Fatal(err)
	}
	r = make([]byte, 24)
	binary.LittleEndian.PutUint32(r[8:], 1)
	binary.LittleEndian.PutUint16(r[14:], 0x50)
	binary.LittleEndian.PutUint16(r[18:], 3)
	binary.LittleEndian.PutUint32(r[20:], 3<<16|24)
	r = append(r, 0x00, 0x10, 0xfe)
	if got := string(pf.appendPrint(nil, &x, r)); got != "i2c-1 #0 a=050 f=0000 l=3 [00-10-fe]" {
		t.Errorf("6.12 i2c_write: %q", got)
	}
}

// An enumerator the kernel's eval map left in a print fmt (6.12's tcp_send_reset names
// TCP_ESTABLISHED...: tcp.h declares no TRACE_DEFINE_ENUM for them) takes its value from
// BinaryDecoder.Enum (the kernel's BTF); without one, or when it has no value, the event is
// refused, naming the enumerator.
func TestPrintFmtEnum(t *testing.T) {
	var reset *tracefs.Format
	for _, f := range kernelFormats(t, "6.12") {
		if f.System == "tcp" && f.Name == "tcp_send_reset" {
			reset = f
		}
	}
	if reset == nil {
		t.Fatal("6.12: no tcp_send_reset format")
	}
	states := map[string]uint64{"TCP_ESTABLISHED": 1, "TCP_SYN_SENT": 2, "TCP_SYN_RECV": 3, "TCP_FIN_WAIT1": 4, "TCP_FIN_WAIT2": 5,
		"TCP_TIME_WAIT": 6, "TCP_CLOSE": 7, "TCP_CLOSE_WAIT": 8, "TCP_LAST_ACK": 9, "TCP_LISTEN": 10, "TCP_CLOSING": 11, "TCP_NEW_SYN_RECV": 12}
	enum := func(name string) (tracefs.EnumConst, bool) {
		v, ok := states[name]
		return tracefs.EnumConst{Value: v, Size: 4, Signed: true}, ok
	}
	if err := CheckFormat(reset, false, "", nil); err == nil || !strings.Contains(err.Error(), "TCP_ESTABLISHED, which the kernel did not resolve") {
		t.Errorf("without Enum: %v", err)
	}
	delete(states, "TCP_CLOSING")
	if err := CheckFormat(reset, false, "", enum); err == nil || !strings.Contains(err.Error(), "TCP_CLOSING, which the kernel did not resolve, and no enum of its BTF") {
		t.Errorf("an enumerator without a value: %v", err)
	}
	states["TCP_CLOSING"] = 11
	d := BinaryDecoder{Enum: enum}
	if err := d.Add(reset); err != nil {
		t.Fatal(err)
	}
	pf, err := parsePrintFmt(reset, false, enum)
	if err != nil {
		t.Fatal(err)
	}
	r := make([]byte, 88)
	copy(r[32:], sockaddrIn(127, 0, 0, 1, 7778))
	copy(r[60:], sockaddrIn(127, 0, 0, 1, 40000))
	for _, c := range []struct {
		state, reason uint32
		want          string
	}{
		{7, 1, "src=127.0.0.1:7778 dest=127.0.0.1:40000 state=TCP_CLOSE reason=NO_SOCKET"},
		{1, 0, "state=TCP_ESTABLISHED reason=NOT_SPECIFIED"},
		{0, 2, "state=UNKNOWN reason=TCP_INVALID_ACK_SEQUENCE"}, // state 0: the ternary's "UNKNOWN"
	} {
		binary.LittleEndian.PutUint32(r[24:], c.state)
		binary.LittleEndian.PutUint32(r[28:], c.reason)
		var x pfEval
		if got := string(pf.appendPrint(nil, &x, r)); !strings.HasSuffix(got, c.want) {
			t.Errorf("state %d reason %d: %q, want it to end %q", c.state, c.reason, got, c.want)
		}
	}
}
