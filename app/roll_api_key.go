package app

import (
	"context"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// RollAPIKey issues a replacement key; the old one expires after grace.
func (a *App) RollAPIKey(ctx context.Context, meta Meta, platformID string, callerEnv domain.Environment, keyID string, grace time.Duration) (Result, error) {
	// The environment is the old key's; Decide sets it on the new key. The
	// secret's prefix must match it, so mint after reading the old key.
	var res Result
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.updatePlatformKeys(ctx, tx, meta, platformID, keyID, func(s platform.State) ([]domain.Event, error) {
			old, ok := s.Keys[keyID]
			env := callerEnv
			if ok {
				env = old.Environment
			}
			key, secret := mintKey(env, old.Name)
			res = Result{ID: key.ID, Secret: secret}
			return platform.Decide(s, platform.RollKey{CallerEnvironment: callerEnv, KeyID: keyID, Grace: grace, NewKey: key, At: now()})
		})
	})
	return res, err
}
