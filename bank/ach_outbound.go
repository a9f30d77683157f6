package bank

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain/ach"
)

// ACHOutbound sends live mode's outbound ACH files. A file goes out in three
// steps, and which of them happened is read from the log, never from the
// outbox:
//
//  1. the cut commits (app.CutACHFile): its payments are submitted, in this
//     file and in no other;
//  2. the file is written to the outbox, under a temporary name, then
//     renamed;
//  3. ach.file_transmitted is recorded.
//
// A crash after step 1 leaves a file cut and not transmitted: Recover, run
// at start and before every cut, writes it — the same bytes, rendered from
// the cut's event — and records it. A crash after step 2 makes Recover
// write it a second time: the rename replaces the copy still in the outbox
// with identical bytes, and a bank that collected the first takes the
// second for the duplicate it is (same origin, creation time and file id
// modifier in its header). No payment is lost, none is in two files.
type ACHOutbound struct {
	App        *app.App
	Outbox     transport.Folder
	Originator ach.Originator
	Log        *slog.Logger

	mu sync.Mutex // one cut at a time in this process; the log keeps processes apart
}

// meta is what the connector's commands record as their actor.
var meta = app.Meta{Actor: "ach_connector"}

// Recover writes and records every file cut but not yet transmitted,
// oldest first, and says how many there were.
func (o *ACHOutbound) Recover(ctx context.Context) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.recover(ctx)
}

func (o *ACHOutbound) recover(ctx context.Context) (int, error) {
	files, err := o.App.UntransmittedACHFiles(ctx)
	if err != nil {
		return 0, err
	}
	for i, f := range files {
		if err := o.send(ctx, f); err != nil {
			return i, err
		}
	}
	return len(files), nil
}

// Cut cuts the files the moment calls for (standard: the standard
// payments go too), writes them and records them; first it recovers what
// an earlier run left. It returns the files cut: none when no payment
// waited, several when more than a file's worth did.
func (o *ACHOutbound) Cut(ctx context.Context, standard bool) ([]ach.FileCreated, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.recover(ctx); err != nil {
		return nil, err
	}
	var cut []ach.FileCreated
	for {
		f, err := o.App.CutACHFile(ctx, meta, o.Originator, standard)
		if err != nil || f == nil {
			return cut, err
		}
		cut = append(cut, *f)
		if err := o.send(ctx, *f); err != nil {
			return cut, err
		}
		if f.EntryCount() < ach.MaxEntries {
			return cut, nil
		}
	}
}

// send is steps 2 and 3 for one file.
func (o *ACHOutbound) send(ctx context.Context, f ach.FileCreated) error {
	data, err := ACHFile(f)
	if err != nil {
		return fmt.Errorf("ACH file %s: %w", f.ACHFileID, err)
	}
	if err := o.Outbox.Put(ctx, f.Name, data); err != nil {
		return fmt.Errorf("ACH file %s to %s: %w", f.ACHFileID, o.Outbox, err)
	}
	if err := o.App.TransmitACHFile(ctx, meta, f.Day, f.ACHFileID); err != nil {
		return fmt.Errorf("ACH file %s written, not recorded (it will be written again): %w", f.ACHFileID, err)
	}
	o.Log.Info("ACH file sent", "ach_file_id", f.ACHFileID, "name", f.Name, "entries", len(f.Entries), "returns", len(f.Returns),
		"total_credit", f.TotalCredit(), "outbox", o.Outbox.String())
	return nil
}

// retryAfter is how long Run waits after a failure before it tries again.
const retryAfter = time.Minute

// settleEvery is how often Run completes the payments whose entries
// settled.
const settleEvery = time.Minute

// Run recovers, then cuts at every window (ach.NextCut), and every minute
// completes the payments whose entries settled without a return, verifies
// the counterparties whose prenotes did, and posts the inbound credits
// whose effective date came, until ctx ends. A cut
// that fails is logged and tried again a minute later (a cut that failed
// is still made, late), what it left undone recovered first.
func (o *ACHOutbound) Run(ctx context.Context) {
	nextCut, standard, recovered := time.Now(), false, false
	nextSettle := time.Now()
	for sleep(ctx, min(time.Until(nextCut), time.Until(nextSettle))) {
		if !time.Now().Before(nextSettle) {
			if n, err := o.App.CompleteSettledACHPayments(ctx, meta, time.Now()); err != nil {
				o.Log.Error("ACH payments not completed: will try again", "err", err, "in", settleEvery)
			} else if n > 0 {
				o.Log.Info("ACH payments settled", "completed", n)
			}
			if n, err := o.App.VerifySettledPrenotes(ctx, meta, time.Now()); err != nil {
				o.Log.Error("ACH prenotes not verified: will try again", "err", err, "in", settleEvery)
			} else if n > 0 {
				o.Log.Info("ACH prenotes settled", "verified", n)
			}
			if n, err := o.App.CompleteSettledACHCredits(ctx, meta, time.Now()); err != nil {
				o.Log.Error("ACH credits not posted: will try again", "err", err, "in", settleEvery)
			} else if n > 0 {
				o.Log.Info("ACH credits settled", "posted", n)
			}
			nextSettle = time.Now().Add(settleEvery)
		}
		if time.Now().Before(nextCut) {
			continue
		}
		var err error
		if !recovered {
			_, err = o.Recover(ctx)
		} else {
			_, err = o.Cut(ctx, standard)
		}
		if err != nil {
			o.Log.Error("ACH files: will try again", "err", err, "in", retryAfter)
			nextCut = time.Now().Add(retryAfter)
			continue
		}
		recovered = true
		nextCut, standard = ach.NextCut(time.Now())
	}
}

// sleep waits d, or less if ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
