from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from games.archive import views as archive_views
from games.archive.feeds import ArchiveFeed, PlayerFeed
from games.mail import views as mail_views
from games.pages import views
from mazesite import benchviews, metrics

urlpatterns = [
    path("", views.lobby, name="lobby"),
    path("new/<slug:kind>/", views.game_new, name="game_new"),
    path("games/<int:game_id>/", views.game_detail, name="game"),
    path("games/<int:game_id>/join", views.game_join, name="game_join"),
    path("games/<int:game_id>/move", views.game_move, name="game_move"),
    path("games/<int:game_id>/draft", views.game_draft, name="game_draft"),
    path("games/<int:game_id>/resign", views.game_resign, name="game_resign"),
    path("games/<int:game_id>/give-time", views.game_give_time, name="game_give_time"),
    path("games/<int:game_id>/ready", views.game_ready, name="game_ready"),
    path("games/<int:game_id>/hint", views.game_hint, name="game_hint"),
    path("games/<int:game_id>/chat", views.game_chat, name="game_chat"),
    path("games/<int:game_id>/chat/post", views.game_chat_post, name="game_chat_post"),
    path("games/<int:game_id>/chat/report", views.game_chat_report, name="game_chat_report"),
    path("games/<int:game_id>/chat/mute", views.game_chat_mute, name="game_chat_mute"),
    path("games/<int:game_id>/chat/unmute", views.game_chat_unmute, name="game_chat_unmute"),
    path("games/<int:game_id>/record.json", views.game_record, name="game_record"),
    path("games/<int:game_id>/accept", views.game_accept, name="game_accept"),
    path("games/<int:game_id>/decline", views.game_decline, name="game_decline"),
    path("games/<int:game_id>/withdraw", views.game_withdraw, name="game_withdraw"),
    path("games/<int:game_id>/abort", views.game_abort, name="game_abort"),
    path("games/<int:game_id>/rematch", views.game_rematch, name="game_rematch"),
    path("games/<int:game_id>/invite/<str:token>/", views.game_invite, name="game_invite"),
    path("games/<int:game_id>/replay/", archive_views.game_replay, name="game_replay"),
    path("archive/", archive_views.archive_list, name="archive"),
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
    urlpatterns += [path("bench/yardstick", benchviews.yardstick, name="bench_yardstick")]
