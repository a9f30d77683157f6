package app

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain/platform"
)

// PlatformSnapshotEvery exposes the snapshot interval to the tests.
const PlatformSnapshotEvery = platformSnapshotEvery

// PlatformLoad is what a platform command's load read.
type PlatformLoad struct {
	State           platform.State
	Version         int64
	SnapshotVersion int64
	EventsRead      int
}

// LoadPlatform loads a platform as its commands do, in a transaction of
// its own that it rolls back.
func LoadPlatform(ctx context.Context, pool *pgxpool.Pool, id, keyID string, forKeys bool) (PlatformLoad, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return PlatformLoad{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	l, err := loadPlatform(ctx, tx, id, keyID, forKeys)
	return PlatformLoad{State: l.state, Version: l.version, SnapshotVersion: l.snapshotVersion, EventsRead: l.eventsRead}, err
}
