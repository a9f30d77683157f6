"""Operator routes beyond platforms: ``client.operator`` (the operator key only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import ACHFile, ACHFileCut, KYBOutcome, KYBReasonParam, KYBVerification
from ._base import APIResource
from .platforms import Platforms

if TYPE_CHECKING:
    from .._base import BaseClient

__all__ = ["Operator", "OperatorKYB", "ACHFiles"]


class OperatorKYB(APIResource):
    """``client.operator.kyb``."""

    def decide(
        self,
        id: str,
        *,
        outcome: KYBOutcome,
        reasons: Union[List[KYBReasonParam], None, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> KYBVerification:
        """Decide a verification in ``pending_review`` (``POST /operator/kyb/{id}/decision``)."""
        body = strip_not_given(outcome=outcome, reasons=reasons)
        return self._post(f"/operator/kyb/{_seg(id)}/decision", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)


class ACHFiles(APIResource):
    """``client.operator.ach_files``: the live NACHA files."""

    def list(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[ACHFile]:
        """List the outbound ACH files, newest first (``GET /operator/rails/ach/files``)."""
        return self._list("/operator/rails/ach/files", query={"limit": limit, "cursor": cursor},
                          request_options=request_options)

    def cut(self, *, idempotency_key: Optional[str] = None,
            request_options: Optional[RequestOptions] = None) -> ACHFileCut:
        """Cut the pending live ACH payments into files now (``POST /operator/rails/ach/files``).

        Raises :class:`~treasury.ConflictError` ``invalid_state`` when the service has no ACH outbox.
        """
        return self._post("/operator/rails/ach/files", idempotency_key=idempotency_key,
                          request_options=request_options)


class Operator(APIResource):
    """``client.operator``: ``platforms`` (also ``client.platforms``), ``kyb``, ``ach_files``."""

    platforms: Platforms
    kyb: OperatorKYB
    ach_files: ACHFiles

    def __init__(self, client: "BaseClient", platforms: Optional[Platforms] = None) -> None:
        super().__init__(client)
        self.platforms = platforms or Platforms(client)
        self.kyb = OperatorKYB(client)
        self.ach_files = ACHFiles(client)
