package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// TestReplayWaitsForAStepUnderWay: a forced replay resets the checkpoint
// under the subscription's lock, so a step of a running subscriber (which
// holds that lock) finishes before the reset, and never moves the
// checkpoint from where it read it to a position the reset took back.
func TestReplayWaitsForAStepUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	step, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close(ctx)
	tx, err := step.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, eventstore.SubscriptionLock(eventstore.ChainName)); err != nil {
		t.Fatal(err)
	}
	// Watched from a connection of its own: a transaction sees
	// pg_stat_activity as of its first look.
	observer, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := replaySubscription(ctx, url, eventstore.ChainName, true)
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for { // bounded: until the reset waits for the step's lock
		var waiting bool
		if err := observer.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event = 'advisory')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the replay did not wait for the step under way (it ended: %v)", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the replay never waited for the step under way")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the replay did not finish")
	}
}
