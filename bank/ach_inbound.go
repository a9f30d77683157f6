package bank

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain/ach"
)

// The inbox's subfolders: files applied, and files set aside unread.
const (
	Processed = "processed"
	Rejected  = "rejected"
)

// ACHInbound applies the files the bank drops in the inbox (API.md §10).
// Each file is applied once: its SHA-256 names a stream in the log, written
// after its entries are applied, so the same bytes again change nothing.
// Applying an entry twice is harmless too (a payment already failed stays
// failed), so a crash between the entries and the record only repeats
// what was done. A file that does not read as NACHA is moved to rejected/
// with a log line and changes nothing — once it has read the same bytes
// on two polls, so that a file the bank is still writing is not taken for
// a broken one.
//
// Returns (addenda 99) fail the payment they name by its trace number;
// notifications of change (addenda 98) are kept on it. Credit entries are
// not applied yet (issue #16): a file that holds any is left in the inbox,
// unapplied, with an error log line at each poll, so that nothing the
// bank sent is acknowledged and lost.
type ACHInbound struct {
	App   *app.App
	Inbox transport.Folder
	Log   *slog.Logger

	mu sync.Mutex
	// unreadable holds, by name, the SHA-256 of a file that did not read
	// as NACHA: the same bytes on the next poll are set aside.
	unreadable map[string]string
}

// Poll applies every file in the inbox, oldest name first, and says how
// many it applied (files applied before and moved now, and rejected ones,
// are not counted).
func (in *ACHInbound) Poll(ctx context.Context) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	names, err := in.Inbox.List(ctx)
	if err != nil {
		return 0, err
	}
	applied := 0
	for _, name := range names {
		data, err := in.Inbox.Get(ctx, name)
		if errors.Is(err, transport.ErrTooLarge) {
			in.Log.Error("ACH inbound file too large: set aside unread", "name", name, "err", err)
			if err := in.Inbox.Move(ctx, name, Rejected); err != nil {
				return applied, err
			}
			continue
		}
		if err != nil {
			return applied, err
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		done, err := in.App.ACHInboundApplied(ctx, hash)
		if err != nil {
			return applied, err
		}
		if done {
			in.Log.Info("ACH inbound file applied before: set aside", "name", name, "sha256", hash)
			if err := in.Inbox.Move(ctx, name, Processed); err != nil {
				return applied, err
			}
			continue
		}
		file, err := nacha.Parse(data)
		if err != nil {
			if in.unreadable[name] != hash { // perhaps still being written: look again next time
				if in.unreadable == nil {
					in.unreadable = map[string]string{}
				}
				in.unreadable[name] = hash
				in.Log.Warn("ACH inbound file does not read (yet): will look again", "name", name, "err", err)
				continue
			}
			delete(in.unreadable, name)
			in.Log.Error("ACH inbound file malformed: set aside unread", "name", name, "sha256", hash, "err", err)
			if err := in.Inbox.Move(ctx, name, Rejected); err != nil {
				return applied, err
			}
			continue
		}
		delete(in.unreadable, name)
		if n := forwardEntries(file); n > 0 {
			// Recorded as applied, the file would be skipped for good once
			// credits are applied: the bank's money must not be
			// acknowledged and dropped. It waits, untouched.
			in.Log.Error("ACH inbound file holds entries that are not returns or notifications of change (credits are not applied yet): left in the inbox, unapplied",
				"name", name, "sha256", hash, "entries", n)
			continue
		}
		if err := in.apply(ctx, name, hash, file); err != nil {
			return applied, err
		}
		if err := in.Inbox.Move(ctx, name, Processed); err != nil {
			return applied, err
		}
		applied++
	}
	return applied, nil
}

// forwardEntries counts the entries of f that are neither returns nor
// notifications of change: credits (or debits) the bank forwards.
func forwardEntries(f nacha.File) int {
	n := 0
	for _, b := range f.Batches {
		for _, e := range b.Entries {
			if e.Addenda == nil || (e.Addenda.Type != nacha.AddendaReturn && e.Addenda.Type != nacha.AddendaNOC) {
				n++
			}
		}
	}
	return n
}

// apply applies a file's returns and notifications of change, then
// records the file.
func (in *ACHInbound) apply(ctx context.Context, name, hash string, f nacha.File) error {
	rec := ach.InboundApplied{SHA256: hash, Name: name}
	for _, b := range f.Batches {
		for _, e := range b.Entries {
			a := e.Addenda
			var id string
			var err error
			switch {
			case a != nil && a.Type == nacha.AddendaReturn:
				id, err = in.App.ReturnACHPayment(ctx, meta, a.OriginalTrace, a.Code)
			case a != nil && a.Type == nacha.AddendaNOC:
				id, err = in.App.NoteACHChange(ctx, meta, a.OriginalTrace, a.Code, a.CorrectedData)
			default: // forwardEntries kept such files out
				return fmt.Errorf("ACH inbound file %s: entry %s is neither a return nor a notification of change", name, e.TraceNumber)
			}
			if errors.Is(err, app.ErrNoSuchTrace) {
				in.Log.Warn("ACH return or change of no payment of ours", "name", name, "original_trace", a.OriginalTrace, "code", a.Code)
				rec.Unmatched++
				continue
			}
			if err != nil {
				return err
			}
			in.Log.Info("ACH return or change applied", "payment_id", id, "addenda", a.Type, "code", a.Code, "original_trace", a.OriginalTrace)
			if a.Type == nacha.AddendaNOC {
				rec.Changes++
			} else {
				rec.Returns++
			}
		}
	}
	return in.App.RecordACHInbound(ctx, meta, rec)
}

// pollEvery is how often Run looks in the inbox.
const pollEvery = time.Minute

// Run polls the inbox every minute until ctx ends.
func (in *ACHInbound) Run(ctx context.Context) {
	for {
		if _, err := in.Poll(ctx); err != nil && ctx.Err() == nil {
			in.Log.Error("ACH inbox: will try again", "err", err, "in", pollEvery)
		}
		if !sleep(ctx, pollEvery) {
			return
		}
	}
}
