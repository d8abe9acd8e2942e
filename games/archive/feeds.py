"""Atom feeds of finished games: the whole archive (with the archive's filters, if given) and one
player's. An entry is a game, linked to its replay (to its page if it has no move), dated by its
finish."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.syndication.views import Feed
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from games.archive import reads
from games.archive.filters import FilterForm, Filters, filters_from


def _title(row: reads.Row) -> str:
    names = " vs ".join(s.name for s in row.seats)
    return f"{row.title} #{row.id}: {names}"


def _description(row: reads.Row) -> str:
    seats = ", ".join(f"{s.name} {s.place_text}" if s.place_text else s.name for s in row.seats)
    moves = f"{row.moves} move{'' if row.moves == 1 else 's'}"
    return f"{seats}. Ended: {row.ending}, after {moves}."


class _GamesFeed(Feed):
    feed_type = Atom1Feed
    author_name = "mazesite"  # Atom wants an author for the feed or for every entry

    def item_title(self, item: reads.Row) -> str:
        return _title(item)

    def item_description(self, item: reads.Row) -> str:
        return _description(item)

    def item_link(self, item: reads.Row) -> str:
        # A game with no move has no replay: its page, which also keeps entries' ids apart.
        return item.replay_url or item.url

    def item_pubdate(self, item: reads.Row) -> datetime | None:
        return item.finished_at

    def item_updateddate(self, item: reads.Row) -> datetime | None:
        return item.finished_at


class ArchiveFeed(_GamesFeed):
    title = "mazesite: finished games"
    subtitle = "Every finished game on mazesite, newest first, each with its replay."

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        form, filters = filters_from(request.GET)
        if form.errors:
            return _refused(form)
        # A player's name in another case: the feed under the name as written, for good, as the
        # archive's page does (it was an empty feed).
        person = filters.player and not filters.bot
        if person and reads.player_named(filters.player) is None:
            written = reads.name_as_written(filters.player)
            if written is not None:
                params = request.GET.copy()
                params["player"] = written
                return redirect(f"{reverse('archive_feed')}?{params.urlencode()}", permanent=True)
        return super().__call__(request, *args, **kwargs)

    def get_object(self, request: HttpRequest) -> Filters:
        _, filters = filters_from(request.GET)
        return filters

    def link(self, obj: Filters) -> str:
        return _with_query(reverse("archive"), obj.query())

    def feed_url(self, obj: Filters) -> str:
        # rel="self": this feed with its filters, not the whole archive's.
        return _with_query(reverse("archive_feed"), obj.query())

    def items(self, obj: Filters) -> list[reads.Row]:
        return reads.finished_page(obj, size=reads.FEED_SIZE).rows


@dataclass(frozen=True)
class PlayerGames:
    """A player's feed: the player, and the filters of the player page it was asked with."""

    player: reads.Player
    filters: Filters


class PlayerFeed(_GamesFeed):
    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        form, _ = filters_from(request.GET, player=kwargs.get("name", ""))
        if form.errors:
            return _refused(form)
        try:
            return super().__call__(request, *args, **kwargs)
        except Http404:
            # Their name in another case: the feed under it, for good.
            written = reads.name_as_written(kwargs.get("name", ""))
            if written is None:
                raise
            query = request.META.get("QUERY_STRING", "")
            url = reverse("player_feed", args=[written]) + (f"?{query}" if query else "")
            return redirect(url, permanent=True)

    def get_object(self, request: HttpRequest, name: str) -> PlayerGames:
        player = reads.player_named(name)
        if player is None:
            raise Http404("No such player.")
        _, filters = filters_from(request.GET, player=player.name)
        return PlayerGames(player, filters)

    def title(self, obj: PlayerGames) -> str:
        return f"mazesite: games of {obj.player.name}"

    def subtitle(self, obj: PlayerGames) -> str:
        return f"The finished games of {obj.player.name}, newest first."

    def link(self, obj: PlayerGames) -> str:
        return _with_query(
            reverse("player", args=[obj.player.name]), obj.filters.query(player=False)
        )

    def feed_url(self, obj: PlayerGames) -> str:
        return _with_query(
            reverse("player_feed", args=[obj.player.name]), obj.filters.query(player=False)
        )

    def items(self, obj: PlayerGames) -> list[reads.Row]:
        return reads.finished_page(obj.filters, size=reads.FEED_SIZE).rows


def _refused(form: FilterForm) -> HttpResponse:
    """A filter the feed cannot read: a 400 that says why, never a feed without it. The archive's
    page drops a bad filter and shows why beside the list; a feed reader shows no message, and a
    feed of every game under a filter's link would look like the filtered one."""
    lines = [
        f"{form.fields[name].label if name in form.fields else 'Filters'}: {message}"
        for name, messages in form.errors.items()
        for message in messages
    ]
    text = "This feed's filters cannot be read, so it lists nothing:\n" + "\n".join(lines)
    return HttpResponseBadRequest(text + "\n", content_type="text/plain; charset=utf-8")


def _with_query(path: str, params: dict[str, str]) -> str:
    query = urlencode(params)
    return path + (f"?{query}" if query else "")
