package kstr

import "testing"

func TestKstrtox(t *testing.T) {
	for _, tc := range []struct {
		s  string
		v  int64
		ok bool
	}{
		{"10", 10, true}, {"0x10", 16, true}, {"010", 8, true}, {"+5", 5, true}, {"-5", -5, true},
		{"++5", 0, false}, {"-+5", 0, false}, {"0x", 0, false}, {"", 0, false}, {"08", 0, false},
		{"9223372036854775808", 0, false}, {"-9223372036854775808", -9223372036854775808, true},
	} {
		v, ok := Strtol(tc.s)
		if ok != tc.ok || (ok && v != tc.v) {
			t.Errorf("Strtol(%q) = %d, %v; want %d, %v", tc.s, v, ok, tc.v, tc.ok)
		}
	}
}
