package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math/big"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
)

// updatePlatform loads a platform, decides, appends and projects.
func (a *App) updatePlatform(ctx context.Context, tx pgx.Tx, meta Meta, platformID string, decide func(platform.State) ([]domain.Event, error)) error {
	recs, version, err := eventstore.Load(ctx, tx, platform.StreamID(platformID))
	if err != nil {
		return err
	}
	state, err := eventstore.Fold(recs, platform.State{ID: platformID}, platform.Evolve)
	if err != nil {
		return err
	}
	events, err := decide(state)
	if err != nil || len(events) == 0 {
		return err
	}
	_, err = a.appendAndProject(ctx, tx, platformStream(platformID), version, meta, events)
	return err
}

func platformStream(id string) eventstore.Stream {
	return eventstore.Stream{ID: platform.StreamID(id), Type: platform.StreamType, PlatformID: id}
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
