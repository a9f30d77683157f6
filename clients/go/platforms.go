package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// PlatformsService is the operator's routes on platforms (POST /platforms and
// /operator/platforms/*); they need the operator key.
type PlatformsService struct{ c *Client }

// Register registers a platform (POST /platforms); it starts pending_approval.
func (s *PlatformsService) Register(ctx context.Context, body CreatePlatformRequest, opts ...RequestOption) (*Platform, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CreatePlatformWithResponse(ctx, &api.CreatePlatformParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// List walks every platform (GET /operator/platforms).
func (s *PlatformsService) List(ctx context.Context, params *ListPlatformsParams, opts ...RequestOption) iter.Seq2[Platform, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]Platform, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListPlatformsWithResponse(ctx, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// Retrieve returns a platform (GET /operator/platforms/{id}).
func (s *PlatformsService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*Platform, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetPlatformWithResponse(ctx, id, &api.GetPlatformParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Update sets a platform's revenue share rate, interest rate, fee schedule and
// rate limit (PATCH /operator/platforms/{id}).
func (s *PlatformsService) Update(ctx context.Context, id string, body ConfigurePlatformRequest, opts ...RequestOption) (*Platform, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.ConfigurePlatformWithResponse(ctx, id, &api.ConfigurePlatformParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Approve approves a platform (POST /operator/platforms/{id}/approve); the
// answer carries its sandbox key with the secret, shown this once.
func (s *PlatformsService) Approve(ctx context.Context, id string, opts ...RequestOption) (*PlatformWithKeys, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.ApprovePlatformWithResponse(ctx, id, &api.ApprovePlatformParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// EnableLive enables live mode (POST /operator/platforms/{id}/enable-live);
// the answer carries the live key with its secret, shown this once.
func (s *PlatformsService) EnableLive(ctx context.Context, id string, opts ...RequestOption) (*PlatformWithKeys, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.EnableLiveWithResponse(ctx, id, &api.EnableLiveParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Fund credits a platform's operating account (POST /operator/platforms/{id}/fund)
// and returns the journal entry.
func (s *PlatformsService) Fund(ctx context.Context, id string, body FundPlatformRequest, opts ...RequestOption) (*JournalEntry, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.FundPlatformWithResponse(ctx, id, &api.FundPlatformParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// PlatformService is the caller's own platform (/platform/*).
type PlatformService struct {
	c *Client
	// Settings: GET and PATCH /platform/settings.
	Settings *PlatformSettingsService
	// APIKeys: the platform's API keys (/platform/api-keys).
	APIKeys *APIKeysService
}

// Retrieve returns the caller's platform (GET /platform).
func (s *PlatformService) Retrieve(ctx context.Context, opts ...RequestOption) (*Platform, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetOwnPlatformWithResponse(ctx, &api.GetOwnPlatformParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// RevenueShare returns the revenue share report of a period
// (GET /platform/revenue-share?from=&to=).
func (s *PlatformService) RevenueShare(ctx context.Context, params GetRevenueShareParams, opts ...RequestOption) (*RevenueShareReport, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetRevenueShareWithResponse(ctx, &params, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// PlatformSettingsService is the platform's settings.
type PlatformSettingsService struct{ c *Client }

// Retrieve returns the settings of the key's environment (GET /platform/settings).
func (s *PlatformSettingsService) Retrieve(ctx context.Context, opts ...RequestOption) (*PlatformSettings, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetSettingsWithResponse(ctx, &api.GetSettingsParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Update changes the settings given (PATCH /platform/settings).
func (s *PlatformSettingsService) Update(ctx context.Context, body UpdateSettingsRequest, opts ...RequestOption) (*PlatformSettings, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.UpdateSettingsWithResponse(ctx, &api.UpdateSettingsParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// APIKeysService is the platform's API keys.
type APIKeysService struct{ c *Client }

// Create creates a key (POST /platform/api-keys); its Secret is in this answer
// only (an idempotent replay, same key and body, returns the key without it).
func (s *APIKeysService) Create(ctx context.Context, body CreateAPIKeyRequest, opts ...RequestOption) (*APIKey, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CreateAPIKeyWithResponse(ctx, &api.CreateAPIKeyParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// List walks every key, without secrets (GET /platform/api-keys).
func (s *APIKeysService) List(ctx context.Context, params *ListAPIKeysParams, opts ...RequestOption) iter.Seq2[APIKey, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]APIKey, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListAPIKeysWithResponse(ctx, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// Revoke revokes a key (DELETE /platform/api-keys/{id}); it stops working at once.
func (s *APIKeysService) Revoke(ctx context.Context, id string, opts ...RequestOption) (*APIKey, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.RevokeAPIKeyWithResponse(ctx, id, &api.RevokeAPIKeyParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Roll replaces a key (POST /platform/api-keys/{id}/roll): the answer is the
// new key with its secret; the old one expires after the grace period.
func (s *APIKeysService) Roll(ctx context.Context, id string, body RollAPIKeyRequest, opts ...RequestOption) (*APIKey, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.RollAPIKeyWithResponse(ctx, id, &api.RollAPIKeyParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201)
}
