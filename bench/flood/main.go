// Command flood plays a hostile client against a running service (issue
// #14): it opens -n stalled connections from 127.0.0.1 (the headers of a
// POST /v1/ledger/entries with Content-Length 100, one byte of the body,
// no key), then times /healthz and, with -key, an authenticated GET from
// 127.0.0.2, and reports how many of the stalled connections the server
// closed over 45 s. Run two at once to pass a 20,000 open-file limit:
//
//	go run ./bench/flood -addr 127.0.0.1:8080 -n 10500 &
//	go run ./bench/flood -addr 127.0.0.1:8080 -n 10500 -key sk_sandbox_…
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "")
	n := flag.Int("n", 5000, "")
	key := flag.String("key", "", "")
	flag.Parse()
	var opened, refused, closed atomic.Int64
	start := time.Now()
	for i := 0; i < *n; i++ {
		c, err := net.DialTimeout("tcp", *addr, 2*time.Second)
		if err != nil {
			refused.Add(1)
			continue
		}
		opened.Add(1)
		fmt.Fprintf(c, "POST /v1/ledger/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		go func() { io.Copy(io.Discard, c); closed.Add(1) }()
	}
	fmt.Printf("opened %d, refused at dial %d, in %s\n", opened.Load(), refused.Load(), time.Since(start).Round(time.Millisecond))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	measure := func(name, url string, auth bool) {
		var ls []time.Duration
		fails := 0
		for i := 0; i < 50; i++ {
			req, _ := http.NewRequest("GET", url, nil)
			if auth {
				req.Header.Set("Authorization", "Bearer "+*key)
			}
			t := time.Now()
			resp, err := cl.Do(req)
			if err != nil || resp.StatusCode != 200 {
				fails++
				if resp != nil {
					resp.Body.Close()
				}
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ls = append(ls, time.Since(t))
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
		if len(ls) == 0 {
			fmt.Printf("%s: all 50 failed\n", name)
			return
		}
		fmt.Printf("%s from 127.0.0.2 while stalled: p50 %s p99 %s max %s, failed %d of 50\n", name,
			ls[len(ls)/2], ls[len(ls)*99/100], ls[len(ls)-1], fails)
	}
	measure("/healthz", "http://"+*addr+"/healthz", false)
	if *key != "" {
		measure("GET /v1/virtual-accounts", "http://"+*addr+"/v1/virtual-accounts?limit=1", true)
	}
	for _, s := range []int{1, 5, 15, 30, 45} {
		time.Sleep(time.Until(start.Add(time.Duration(s) * time.Second)))
		fmt.Printf("t+%ds: %d of %d stalled connections closed by the server\n", s, closed.Load(), opened.Load())
	}
}
