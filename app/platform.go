package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/big"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
)

// updatePlatform loads a platform, decides, appends and projects. It
// takes no lock: a concurrent change makes the append conflict, and the
// runner retries on fresh state.
func (a *App) updatePlatform(ctx context.Context, tx pgx.Tx, meta Meta, platformID string, decide func(platform.State) ([]domain.Event, error)) error {
	l, err := loadPlatform(ctx, tx, platformID, "", false)
	if err != nil {
		return err
	}
	return a.decidePlatform(ctx, tx, meta, l, decide)
}

// updatePlatformKeys is updatePlatform for the commands on keys. Their
// events go to the keys' own streams, which do not conflict with one
// another, so it locks the platform's stream row first: two commands
// cannot then both count 99 keys in use and both create the 100th.
// keyID, if set, is the key the command is about.
func (a *App) updatePlatformKeys(ctx context.Context, tx pgx.Tx, meta Meta, platformID, keyID string, decide func(platform.State) ([]domain.Event, error)) error {
	l, err := loadPlatform(ctx, tx, platformID, keyID, true)
	if err != nil {
		return err
	}
	return a.decidePlatform(ctx, tx, meta, l, decide)
}

func (a *App) decidePlatform(ctx context.Context, tx pgx.Tx, meta Meta, l loadedPlatform, decide func(platform.State) ([]domain.Event, error)) error {
	events, err := decide(l.state)
	if err != nil || len(events) == 0 {
		return err
	}
	reqs := l.appendRequests(events)
	if err := appendAndProjectAll(ctx, tx, meta, reqs...); err != nil {
		return err
	}
	return l.snapshotIfDue(ctx, tx, events, reqs)
}

// platformSnapshotEvery is how many events of the platform's stream a
// command may read past its snapshot before it takes a new one: a
// platform command reads at most this many, however long the stream.
const platformSnapshotEvery = 64

// snapshotIfDue snapshots the platform's state after events, in the
// command's transaction, once its stream has grown platformSnapshotEvery
// past the snapshot. The keys stay out: the snapshot is the platform's,
// and a command reads its key and the keys in use afresh.
func (l loadedPlatform) snapshotIfDue(ctx context.Context, tx pgx.Tx, events []domain.Event, reqs []eventstore.AppendRequest) error {
	version := l.version
	for _, r := range reqs {
		if r.Stream.ID == platform.StreamID(l.state.ID) {
			version += int64(len(r.Events))
		}
	}
	if version-l.snapshotVersion <= platformSnapshotEvery {
		return nil
	}
	state := l.state
	for _, e := range events {
		state = platform.Evolve(state, e)
	}
	state.Keys, state.KeysInUse = map[string]platform.Key{}, nil
	return eventstore.SaveSnapshot(ctx, tx, platform.StreamID(l.state.ID), platform.SnapshotSchema, version, state)
}

// loadedPlatform is a platform's state with where its events go.
type loadedPlatform struct {
	state   platform.State
	version int64 // of the platform's stream
	// snapshotVersion is the version of the snapshot the state started
	// from (0: none), and eventsRead how many platform events it read
	// past it.
	snapshotVersion int64
	eventsRead      int
	// keyVersions holds the loaded keys that have a stream of their own
	// (keys created before that keep their events in the platform's).
	keyVersions map[string]int64
}

var keyEventTypes = []string{
	platform.KeyCreated{}.EventType(), platform.KeyRevoked{}.EventType(), platform.KeyRolled{}.EventType(),
}

// loadPlatform reads, in one round trip, the platform's stream version,
// its snapshot and the events after it but those of keys (a log written
// before keys had streams holds them there: the filter keeps their
// number out of every command),
// the events of the key keyID wherever they are, and, forKeys, the keys
// in use (after locking the stream row). The version is read first: if
// the events read after it are newer, the append conflicts and retries.
func loadPlatform(ctx context.Context, tx pgx.Tx, id, keyID string, forKeys bool) (loadedPlatform, error) {
	l := loadedPlatform{state: platform.State{ID: id}, keyVersions: map[string]int64{}}
	var keyRecs []eventstore.RecordedEvent
	lock := ""
	if forKeys {
		lock = " FOR UPDATE"
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT version FROM streams WHERE stream_id = $1`+lock, platform.StreamID(id)).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&l.version); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	snap := eventstore.SnapshotLoad[platform.State]{State: l.state}
	eventstore.QueueLoadFromSnapshot(b, platform.StreamID(id), platform.SnapshotSchema,
		`event_type <> ALL($3)`, []any{keyEventTypes}, &snap)
	if keyID != "" {
		b.Queue(`SELECT `+eventstore.SelectColumns+` FROM events
            WHERE (stream_id = $1 AND platform_id = $5) -- never another platform's key
               OR (stream_id = $2 AND event_type = ANY($3) AND data->>'key_id' = $4)
            ORDER BY global_position`, platform.KeyStreamID(keyID), platform.StreamID(id), keyEventTypes, keyID, id,
		).Query(func(rows pgx.Rows) (err error) {
			keyRecs, err = eventstore.ScanEvents(rows)
			return err
		})
	}
	inUse := map[domain.Environment]int{}
	if forKeys {
		b.Queue(`SELECT environment, count(*) FROM api_keys WHERE platform_id = $1 AND revoked_at IS NULL
            AND (expires_at IS NULL OR expires_at > $2) GROUP BY environment`, id, now()).Query(func(rows pgx.Rows) error {
			return scanKeysInUse(rows, inUse)
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return l, err
	}
	var err error
	if l.state, err = snap.Fold(platform.Evolve); err != nil {
		return l, err
	}
	l.snapshotVersion, l.eventsRead = snap.Version, len(snap.Events)
	if l.state, err = eventstore.Fold(keyRecs, l.state, platform.Evolve); err != nil {
		return l, err
	}
	if forKeys {
		l.state.KeysInUse = inUse // after the fold: Registered starts the state afresh
	}
	for _, r := range keyRecs {
		if r.StreamID == platform.KeyStreamID(keyID) {
			l.keyVersions[keyID] = r.StreamVersion
		}
	}
	return l, nil
}

func scanKeysInUse(rows pgx.Rows, into map[domain.Environment]int) error {
	defer rows.Close()
	for rows.Next() {
		var env string
		var n int
		if err := rows.Scan(&env, &n); err != nil {
			return err
		}
		if e, ok := domain.ParseEnvironment(env); ok {
			into[e] = n
		}
	}
	return rows.Err()
}

// appendRequests sends each event to its stream: a key's events to the
// key's stream (a new key gets one), a key that predates key streams'
// events and every other event to the platform's stream.
func (l loadedPlatform) appendRequests(events []domain.Event) []eventstore.AppendRequest {
	id := l.state.ID
	var reqs []eventstore.AppendRequest
	at := map[string]int{} // stream id → index in reqs
	add := func(s eventstore.Stream, expected int64, e domain.Event) {
		i, ok := at[s.ID]
		if !ok {
			i = len(reqs)
			at[s.ID] = i
			reqs = append(reqs, eventstore.AppendRequest{Stream: s, Expected: expected})
		}
		reqs[i].Events = append(reqs[i].Events, e)
	}
	for _, e := range events {
		keyID := platform.KeyOf(e)
		version, ownStream := l.keyVersions[keyID]
		if created, ok := e.(platform.KeyCreated); ok {
			add(keyStream(id, keyID, created.Environment), 0, e)
			continue
		}
		if keyID != "" && ownStream {
			add(keyStream(id, keyID, l.state.Keys[keyID].Environment), version, e)
			continue
		}
		add(platformStream(id), l.version, e)
	}
	return reqs
}

func platformStream(id string) eventstore.Stream {
	return eventstore.Stream{ID: platform.StreamID(id), Type: platform.StreamType, PlatformID: id}
}

func keyStream(platformID, keyID string, env domain.Environment) eventstore.Stream {
	return eventstore.Stream{ID: platform.KeyStreamID(keyID), Type: platform.KeyStreamType,
		PlatformID: platformID, Environment: env.String()}
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// KeySecretLen is the number of base62 characters after the key's prefix.
const KeySecretLen = 40

// mintKey makes a new API key: sk_live_ or sk_sandbox_ and 40 random base62
// characters. Only its SHA-256 leaves this function, besides the secret
// returned to show once.
func mintKey(env domain.Environment, name string) (platform.NewKey, string) {
	b := make([]byte, KeySecretLen)
	max := big.NewInt(int64(len(base62)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		b[i] = base62[n.Int64()]
	}
	secret := "sk_" + env.String() + "_" + string(b)
	return platform.NewKey{
		ID: domain.NewID(domain.PrefixAPIKey), Environment: env, Name: name,
		Prefix: secret[:12], SecretHash: HashSecret(secret),
	}, secret
}

// HashSecret is how API key secrets are stored and looked up.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
