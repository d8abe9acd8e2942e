from django.contrib import admin
from django.urls import include, path

from games import views

urlpatterns = [
    path("", views.lobby, name="lobby"),
    path("new/<slug:kind>/", views.game_new, name="game_new"),
    path("games/<int:game_id>/", views.game_detail, name="game"),
    path("games/<int:game_id>/join", views.game_join, name="game_join"),
    path("games/<int:game_id>/move", views.game_move, name="game_move"),
    path("games/<int:game_id>/resign", views.game_resign, name="game_resign"),
    path("games/<int:game_id>/record.json", views.game_record, name="game_record"),
    path("rules/<slug:kind>/", views.rules, name="rules"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("games.account_urls")),
    path("admin/", admin.site.urls),
]
