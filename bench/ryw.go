package main

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// rywResult is the read-your-writes check as a platform lives it: right
// after the loads, clients each post a fee entry on an account of their
// own and at once list that account's ledger entries; a list whose newest
// entry is not the one just written is a miss.
type rywResult struct {
	Clients   int     `json:"clients"`
	Writes    int     `json:"writes"`
	Misses    int     `json:"misses"`
	Failed    int     `json:"failed_requests"`
	ListP50ms float64 `json:"list_p50_ms"`
	ListP99ms float64 `json:"list_p99_ms"`
	Note      string  `json:"note"`
}

const rywClients, rywRounds = 8, 125

func (b *bench) readYourWrites() (*rywResult, error) {
	if len(b.svc.accounts) < rywClients {
		return nil, fmt.Errorf("read-your-writes needs %d accounts, have %d", rywClients, len(b.svc.accounts))
	}
	logf("ryw: %d clients × %d: POST /v1/ledger/entries, then at once GET /v1/ledger/entries of that account", rywClients, rywRounds)
	res := &rywResult{Clients: rywClients, Writes: rywClients * rywRounds,
		Note: "right after the loads, no wait: each write is a 1-cent fee on the client's own account, listed at once (limit=1)"}
	var mu sync.Mutex
	var lists []time.Duration
	var wg sync.WaitGroup
	for c := range rywClients {
		va := b.svc.accounts[len(b.svc.accounts)-1-c] // the last accounts: the hot loads use the first ones
		wg.Go(func() {
			for range rywRounds {
				m, _, err := b.svc.call(http.MethodPost, "/v1/ledger/entries", b.svc.auth, map[string]any{
					"type": "fee", "description": "bench read-your-writes", "virtual_account_id": va, "direction": "debit", "amount": 1})
				je, _ := m["id"].(string)
				if err != nil || je == "" {
					mu.Lock()
					res.Failed++
					mu.Unlock()
					continue
				}
				start := time.Now()
				l, _, err := b.svc.call(http.MethodGet, "/v1/ledger/entries?limit=1&virtual_account_id="+va, b.svc.auth, nil)
				took := time.Since(start)
				newest := ""
				if data, _ := l["data"].([]any); len(data) > 0 {
					if e, _ := data[0].(map[string]any); e != nil {
						newest, _ = e["journal_entry_id"].(string)
					}
				}
				mu.Lock()
				switch {
				case err != nil:
					res.Failed++
				case newest != je:
					res.Misses++
				}
				lists = append(lists, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.ListP50ms, res.ListP99ms, _ = percentiles(lists)
	logf("ryw: %d writes, %d lists missed their write, %d failed requests; list p50 %.1f ms, p99 %.1f ms",
		res.Writes, res.Misses, res.Failed, res.ListP50ms, res.ListP99ms)
	return res, nil
}
