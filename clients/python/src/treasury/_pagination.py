"""Cursor pagination: a :class:`Page` is one page, and iterating it walks them all."""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, Iterator, List, Optional, TypeVar

__all__ = ["Page"]

T = TypeVar("T")


class Page(Generic[T]):
    """One page of a list, which walks every following page when iterated.

    ``for payment in client.payments.list():`` yields every payment, fetching
    the next page (``cursor`` = this page's ``next_cursor``) when one is used up.

    Attributes:
        data: The items of this page only.
        has_more: Whether a page follows this one.
        next_cursor: The cursor of the next page, or ``None``.
    """

    data: List[T]
    has_more: bool
    next_cursor: Optional[str]

    def __init__(self, raw: Dict[str, Any], fetch: Callable[[Optional[str]], Dict[str, Any]]) -> None:
        self._fetch = fetch
        self.data = list(raw.get("data") or [])
        self.has_more = bool(raw.get("has_more"))
        self.next_cursor = raw.get("next_cursor")

    def has_next_page(self) -> bool:
        """Whether another page follows this one."""
        return self.has_more and bool(self.next_cursor)

    def next_page(self) -> Optional["Page[T]"]:
        """Fetch the page after this one, or return ``None`` on the last page."""
        if not self.has_next_page():
            return None
        return Page(self._fetch(self.next_cursor), self._fetch)

    def iter_pages(self) -> Iterator["Page[T]"]:
        """Yield this page, then every following page (one request each)."""
        page: Optional[Page[T]] = self
        while page is not None:
            yield page
            page = page.next_page()

    def __iter__(self) -> Iterator[T]:
        """Yield every item of this page and of every following page."""
        for page in self.iter_pages():
            yield from page.data

    def __repr__(self) -> str:
        return f"<Page items={len(self.data)} has_more={self.has_more} next_cursor={self.next_cursor!r}>"
