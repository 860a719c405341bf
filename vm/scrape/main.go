// Command scrape is the Prometheus client of vm/bench-agent.sh: it GETs a URL -n times in a row
// and prints "SCRAPE n N bytes B series S prefixed P median M min L max H" (the last body's
// bytes, its series: lines neither empty nor comments, those of them starting with -prefix, and
// the seconds per GET). -o writes the last body to a file. It exits 1 unless every GET
// answered 200.
//
//	scrape -url http://127.0.0.1:9469/metrics -n 20 -prefix ftctl_hist_sched_process_exit
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"
)

func main() {
	url := flag.String("url", "", "the URL to GET")
	n := flag.Int("n", 1, "GET `N` times")
	prefix := flag.String("prefix", "ftctl_", "also count the series whose names start with `P`")
	out := flag.String("o", "", "write the last body to `FILE`")
	flag.Parse()
	if *url == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: scrape -url URL [-n N] [-prefix P] [-o FILE]")
		os.Exit(2)
	}
	var body []byte
	times := make([]float64, 0, *n)
	for i := 0; i < *n; i++ {
		start := time.Now()
		resp, err := http.Get(*url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "scrape:", err)
			os.Exit(1)
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		times = append(times, time.Since(start).Seconds())
		if err != nil || resp.StatusCode != http.StatusOK {
			fmt.Fprintln(os.Stderr, "scrape:", resp.Status, err)
			os.Exit(1)
		}
	}
	if *out != "" {
		if err := os.WriteFile(*out, body, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "scrape:", err)
			os.Exit(1)
		}
	}
	series, prefixed := 0, 0
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		series++
		if bytes.HasPrefix(line, []byte(*prefix)) {
			prefixed++
		}
	}
	slices.Sort(times)
	med := times[len(times)/2]
	if len(times)%2 == 0 {
		med = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
	fmt.Printf("SCRAPE n %d bytes %d series %d prefixed %d median %.6f min %.6f max %.6f\n",
		*n, len(body), series, prefixed, med, times[0], times[len(times)-1])
}
