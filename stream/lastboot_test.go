package stream

import (
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

const savedSyms = "ffffffff81000000 T _text\nffffffff81001000 T do_one\nffffffff82000000 D _sdata\nffffffffc0001000 t mod_fn\t[dummy]\n"

func TestAddressShift(t *testing.T) {
	s := AddressShift{Text: 0x200000, Data: -0x1000, Known: true}
	got := string(s.Kallsyms([]byte(savedSyms)))
	want := "ffffffff81200000 T _text\nffffffff81201000 T do_one\nffffffff82200000 D _sdata\nffffffffc0001000 t mod_fn\t[dummy]\n"
	if got != want {
		t.Errorf("Kallsyms:\n%s\nwant\n%s", got, want)
	}
	pk := "0xffffffff82001000 : \"hello %d\\n\"\nnot an address\n"
	if got, want := string(s.Printk([]byte(pk))), "0xffffffff82000000 : \"hello %d\\n\"\nnot an address\n"; got != want {
		t.Errorf("Printk = %q, want %q", got, want)
	}
	if got := string(AddressShift{}.Kallsyms([]byte(savedSyms))); got != savedSyms {
		t.Errorf("a zero shift changed kallsyms: %q", got)
	}
}

func TestLastBootShift(t *testing.T) {
	now := "ffffffff81400000 T _text\nffffffff82400000 D _sdata\n" // this boot: KASLR moved it by 0x400000 from the saving boot
	for _, c := range []struct {
		name string
		now  string
		lb   tracefs.LastBoot
		want AddressShift
	}{
		// the previous boot saved the capture: it was where the deltas say
		{"saved by the previous boot", now, tracefs.LastBoot{Text: 0x400000, Data: 0x400000}, AddressShift{Known: true}},
		// saved two boots ago at 0; the previous boot was at +0x100000 (now - 0x300000)
		{"saved earlier", now, tracefs.LastBoot{Text: 0x300000, Data: 0x300000}, AddressShift{Text: 0x100000, Data: 0x100000, Known: true}},
		{"nokaslr", savedSyms, tracefs.LastBoot{}, AddressShift{Known: true}},
		{"hidden addresses", "0000000000000000 T _text\n", tracefs.LastBoot{Text: 5}, AddressShift{}},
	} {
		if got := LastBootShift([]byte(savedSyms), []byte(c.now), c.lb); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
