"""The user scope beside the project's: the developer's preferences (scope.USER_DOMAIN, captured from their words in
any project) are searched and injected with every project's memories; one project's memories never reach another.

Both scopes are ranked together by recall.search (`extra_domains`), so a preference that fits the query as well
as a project memory is found as easily; no constant of its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from subcog_store.recall.search import SearchResult, search
from subcog_store.scope import USER_DOMAIN

if TYPE_CHECKING:
    from subcog_store.core import Core

__all__ = ["search_with_user_scope"]


def search_with_user_scope(store: "Core", query: str, *, domain: str, limit: int = 5, **kw) -> SearchResult:
    """`recall.search.search` of `domain` and the user scope (see the module docstring)."""
    extra = () if domain == USER_DOMAIN else (USER_DOMAIN,)
    return search(store, query, domain=domain, limit=limit, extra_domains=extra, **kw)
