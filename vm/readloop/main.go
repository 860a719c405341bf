// Command readloop is the workload of vm/bench-hist.sh: a fixed syscall loop, read(2) of a few
// bytes of a small file from offset 0 (pread64), as fast as it can for a given time; it prints
// "READS ops N secs T rate R" (R in reads per second). Each read goes through vfs_read.
//
//	readloop -file /tmp/small -seconds 5
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"
)

func main() {
	file := flag.String("file", "", "the file to read")
	seconds := flag.Float64("seconds", 5, "how long to read")
	flag.Parse()
	f, err := os.Open(*file)
	if *file == "" || err != nil || *seconds <= 0 {
		fmt.Fprintln(os.Stderr, "usage: readloop -file FILE -seconds S", err)
		os.Exit(2)
	}
	fd := int(f.Fd())
	var buf [16]byte
	end := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	start := time.Now()
	n := 0
	for {
		for i := 0; i < 256; i++ { // the clock read once per 256 reads
			if _, err := syscall.Pread(fd, buf[:], 0); err != nil {
				fmt.Fprintln(os.Stderr, "readloop:", err)
				os.Exit(1)
			}
		}
		n += 256
		if !time.Now().Before(end) {
			break
		}
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("READS ops %d secs %.3f rate %.0f\n", n, secs, float64(n)/secs)
}
