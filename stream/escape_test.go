package stream

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// plainWord agrees with the byte table for every byte value in every position, whatever
// its neighbours (carries must not leak from one byte into the next).
func TestPlainJSONWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		var w [8]byte
		for i := range w {
			w[i] = byte(rng.UintN(256))
			if round%2 == 0 {
				w[i] = byte(0x20 + rng.UintN(0x5f)) // mostly plain neighbours
			}
		}
		for pos := 0; pos < 8; pos++ {
			for c := 0; c < 256; c++ {
				w[pos] = byte(c)
				want, wantText := true, true
				for _, b := range w {
					want = want && plainJSON[b]
					wantText = wantText && plainText[b]
				}
				if got := plainWord(binary.LittleEndian.Uint64(w[:]), '\\', '\\'); got != wantText {
					t.Fatalf("plainWord(% x) for text = %v, want %v", w, got, wantText)
				}
				if got := plainWord(binary.LittleEndian.Uint64(w[:]), '"', '\\'); got != want {
					t.Fatalf("plainWord(% x) = %v, want %v", w, got, want)
				}
			}
		}
	}
}

// plainPrefix is the leading plain run for every length and every position of a bad byte.
func TestPlainJSONPrefix(t *testing.T) {
	for n := 0; n <= 40; n++ {
		for bad := -1; bad < n; bad++ {
			for _, c := range []byte{0, 0x1f, '"', '\\', 0x7f, 0x80, 0xff} {
				s := make([]byte, n)
				for i := range s {
					s[i] = 'a' + byte(i%26)
				}
				want := n
				if bad >= 0 {
					s[bad] = c
					want = bad
				}
				if got := plainPrefix(s, '"', '\\', &plainJSON); got != want {
					t.Fatalf("plainPrefix(%q) = %d, want %d", s, got, want)
				}
			}
		}
	}
}

// symWord agrees with symStop on the bytes it accepts, and accepts words of names.
func TestSymWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 2000; round++ {
		var w [8]byte
		for i := range w {
			w[i] = "abcdefghijklmnopqrstuvwxyz_0123456789"[rng.UintN(37)]
		}
		if !symWord(binary.LittleEndian.Uint64(w[:])) {
			t.Fatalf("symWord(%q) = false", w)
		}
		for pos := 0; pos < 8; pos++ {
			for c := 0; c < 256; c++ {
				v := w
				v[pos] = byte(c)
				want := c >= '0' && c <= '9' || c >= 0x5f && c <= 0x7a
				if got := symWord(binary.LittleEndian.Uint64(v[:])); got != want {
					t.Fatalf("symWord(% x) = %v, want %v", v, got, want)
				}
				if want && symStop[c] {
					t.Fatalf("symWord accepts %#x, a byte that ends a symbol", c)
				}
			}
		}
	}
}

// plainPrefix reads past a short string only within its capacity, and never counts what follows.
func TestPlainPrefixShortInBuffer(t *testing.T) {
	buf := []byte("ab\x1b\"cdefghij")
	for n := 0; n < 8; n++ {
		want := min(n, 2)
		if got := plainPrefix(buf[:n], '"', '\\', &plainJSON); got != want {
			t.Fatalf("plainPrefix(%q in a larger buffer) = %d, want %d", buf[:n], got, want)
		}
		if got := plainPrefix(buf[3:3+n:3+n], '"', '\\', &plainJSON); got != min(n, 0) {
			t.Fatalf("plainPrefix(%q) = %d, want 0", buf[3:3+n], got)
		}
	}
}
