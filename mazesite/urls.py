from django.conf import settings
from django.contrib import admin
from django.urls import include, path, register_converter

from games.archive import views as archive_views
from games.archive.feeds import ArchiveFeed, PlayerFeed
from games.mail import views as mail_views
from games.pages import views
from mazesite import benchviews, metrics


class GameIdConverter:
    """A game's id: at most 18 digits, so always within the database's 64-bit integers (a
    longer number is no game: a 404 from the resolver, never an overflow in a query)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(GameIdConverter, "game_id")

urlpatterns = [
    path("", views.lobby, name="lobby"),
    path("new/<slug:kind>/", views.game_new, name="game_new"),
    path("games/<game_id:game_id>/", views.game_detail, name="game"),
    path("games/<game_id:game_id>/join", views.game_join, name="game_join"),
    path("games/<game_id:game_id>/move", views.game_move, name="game_move"),
    path("games/<game_id:game_id>/draft", views.game_draft, name="game_draft"),
    path("games/<game_id:game_id>/resign", views.game_resign, name="game_resign"),
    path("games/<game_id:game_id>/give-time", views.game_give_time, name="game_give_time"),
    path("games/<game_id:game_id>/ready", views.game_ready, name="game_ready"),
    path("games/<game_id:game_id>/hint", views.game_hint, name="game_hint"),
    path("games/<game_id:game_id>/chat", views.game_chat, name="game_chat"),
    path("games/<game_id:game_id>/chat/post", views.game_chat_post, name="game_chat_post"),
    path("games/<game_id:game_id>/chat/report", views.game_chat_report, name="game_chat_report"),
    path("games/<game_id:game_id>/chat/mute", views.game_chat_mute, name="game_chat_mute"),
    path("games/<game_id:game_id>/chat/unmute", views.game_chat_unmute, name="game_chat_unmute"),
    path("games/<game_id:game_id>/record.json", views.game_record, name="game_record"),
    path("games/<game_id:game_id>/accept", views.game_accept, name="game_accept"),
    path("games/<game_id:game_id>/decline", views.game_decline, name="game_decline"),
    path("games/<game_id:game_id>/withdraw", views.game_withdraw, name="game_withdraw"),
    path("games/<game_id:game_id>/abort", views.game_abort, name="game_abort"),
    path("games/<game_id:game_id>/rematch", views.game_rematch, name="game_rematch"),
    path("games/<game_id:game_id>/invite/<str:token>/", views.game_invite, name="game_invite"),
    path("games/<game_id:game_id>/replay/", archive_views.game_replay, name="game_replay"),
    path("archive/", archive_views.archive_list, name="archive"),
    path("records/verify/", archive_views.record_verify_page, name="record_verify"),
    path("archive/feed/", ArchiveFeed(), name="archive_feed"),
    # Guests' names have a space ("Guest 2935"): reverse() quotes it.
    path("players/<str:name>/", archive_views.player_detail, name="player"),
    path("players/<str:name>/feed/", PlayerFeed(), name="player_feed"),
    path("leaderboard/<slug:kind>/", archive_views.leaderboard, name="leaderboard"),
    path("rules/<slug:kind>/", views.rules, name="rules"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/email/settings/", mail_views.email_settings, name="email_settings"),
    path("unsubscribe/<str:token>/", mail_views.unsubscribe, name="unsubscribe"),
    path("accounts/", include("games.accounts.urls")),
    path("admin/", admin.site.urls),
]
urlpatterns += [path("metrics", metrics.metrics, name="metrics")]
if settings.BENCH_YARDSTICK:
    urlpatterns += [
        path("bench/yardstick", benchviews.yardstick, name="bench_yardstick"),
        path("bench/least-move", benchviews.least_move, name="bench_least_move"),
    ]
