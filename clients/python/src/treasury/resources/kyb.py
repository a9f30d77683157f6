"""KYB verifications: ``client.kyb``."""

from __future__ import annotations

from typing import List, Optional

from .._base import path_segment as _seg
from .._pagination import Page
from .._types import RequestOptions
from ..types import KYBBusinessParam, KYBOwnerParam, KYBVerification, KYBVerificationStatus
from ._base import APIResource

__all__ = ["KYB"]


class KYB(APIResource):
    """Submit a business for KYB and follow the decision."""

    def create(
        self,
        *,
        virtual_account_id: str,
        business: KYBBusinessParam,
        beneficial_owners: List[KYBOwnerParam],
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> KYBVerification:
        """Submit a KYB verification (``POST /kyb``); it starts ``pending``.

        In the sandbox it is decided within a second by the EIN's ending: ``0000``
        rejected, ``1111`` ``pending_review``, anything else approved.
        """
        body = {"virtual_account_id": virtual_account_id, "business": business,
                "beneficial_owners": beneficial_owners}
        return self._post("/kyb", body=body, idempotency_key=idempotency_key, request_options=request_options)

    submit = create

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> KYBVerification:
        """Get a verification with its decision (``GET /kyb/{id}``)."""
        return self._get(f"/kyb/{_seg(id)}", request_options=request_options)

    def list(
        self,
        *,
        virtual_account_id: Optional[str] = None,
        status: Optional[KYBVerificationStatus] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[KYBVerification]:
        """List verifications, newest first (``GET /kyb``)."""
        return self._list("/kyb", query={"virtual_account_id": virtual_account_id, "status": status,
                                         "limit": limit, "cursor": cursor},
                          request_options=request_options)
