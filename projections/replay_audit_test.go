package projections_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// Webhook replays are a projection of webhook_endpoint.replay_requested:
// the audit rebuilds them from the log equal to the live table, and finds
// an edited one.
func TestCompareWithLogCoversWebhookReplays(t *testing.T) {
	ctx, pool, _ := auditSetup(t)
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var platformID string
	if err := pool.QueryRow(ctx, `SELECT platform_id FROM virtual_accounts LIMIT 1`).Scan(&platformID); err != nil {
		t.Fatal(err)
	}
	c := app.Caller{PlatformID: platformID, Environment: domain.Sandbox}
	url := "https://hooks.example.com/audit"
	wh, err := a.CreateWebhook(ctx, app.Meta{}, nil, c, app.WebhookInput{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]string{nil, {"virtual_account.created"}} {
		if _, err := a.ReplayWebhook(ctx, app.Meta{}, nil, c, wh.ID, webhook.ReplayRequest{CreatedAfter: time.Now().Add(-time.Hour),
			CreatedBefore: time.Now().Add(time.Hour), Types: types}); err != nil {
			t.Fatal(err)
		}
	}
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := projections.CatchUp(ctx, pool, head, nil); err != nil {
		t.Fatal(err)
	}
	var replayed int
	if err := pool.QueryRow(ctx, `SELECT min(replayed) FROM webhook_replays`).Scan(&replayed); err != nil || replayed == 0 {
		t.Fatalf("replays replayed %d events at least (%v), want some", replayed, err)
	}
	if diffs, _ := auditCompare(t, ctx, pool); len(diffs) != 0 {
		t.Fatalf("projections with replays differ from the log: %+v", diffs)
	}
	if _, err := pool.Exec(ctx, `UPDATE webhook_replays SET replayed = replayed + 1 WHERE types IS NULL`); err != nil {
		t.Fatal(err)
	}
	diffs, _ := auditCompare(t, ctx, pool)
	if d := diffOn(diffs, "webhook_replays"); d == nil || d.OnlyLive != 1 || d.OnlyRebuilt != 1 {
		t.Fatalf("diffs = %+v; want webhook_replays 1/1", diffs)
	}
}
